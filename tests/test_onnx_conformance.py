"""ONNX's own node tests, and every matrix case as a one-node model, through the
ReferenceEvaluator with scatterx's operators (contract section 11)."""

from __future__ import annotations

from typing import Any

import pytest

from scatterx import backends
from scatterx.testing import assert_bitwise_equal, matrix_cases
from scatterx.testing._onnx_cases import OPERATORS, onnx_node_tests, run_onnx_case

pytest.importorskip("onnx")

from onnx.reference import ReferenceEvaluator

import scatterx
import scatterx.onnx

NODE_TESTS = onnx_node_tests()
CPU_BACKENDS = [r.name for r in backends() if r.available and r.array_types == ("numpy:ndarray",)]


def test_every_operator_has_node_tests() -> None:
    ops = [t.model.graph.node[0].op_type for t in NODE_TESTS]
    assert sorted(set(ops)) == sorted(OPERATORS)
    assert (ops.count("ScatterElements"), ops.count("GatherElements")) == (7, 3)
    assert ops.count("Scatter") == 2
    assert (ops.count("ScatterND"), ops.count("GatherND")) == (7, 3)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("test", NODE_TESTS, ids=[t.name for t in NODE_TESTS])
def test_onnx_node_test_through_the_evaluator(test: Any, backend: str) -> None:
    if backend not in CPU_BACKENDS:
        pytest.skip(f"{backend} is unavailable")
    session = ReferenceEvaluator(test.model, new_ops=list(scatterx.onnx.ops))
    ((inputs, outputs),) = test.data_sets
    names = [i.name for i in test.model.graph.input]
    with scatterx.use_backend(backend):
        results = list(session.run(None, dict(zip(names, inputs, strict=True))))
    assert len(results) == len(outputs) == 1
    assert_bitwise_equal(results[0], outputs[0])


@pytest.mark.parametrize("test", NODE_TESTS, ids=[t.name for t in NODE_TESTS])
def test_node_tests_run_on_scatterx_not_on_the_reference(test: Any) -> None:
    # A backend that cannot serve NumPy arrays makes the node fail: the call went through scatterx.
    session = ReferenceEvaluator(test.model, new_ops=list(scatterx.onnx.ops))
    ((inputs, _),) = test.data_sets
    names = [i.name for i in test.model.graph.input]
    op_type = test.model.graph.node[0].op_type
    with scatterx.use_backend("dask"), pytest.raises(scatterx.BackendError, match=op_type):
        session.run(None, dict(zip(names, inputs, strict=True)))


CASES = matrix_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_matrix_case_as_a_one_node_model(case: Any) -> None:
    outcome = run_onnx_case("numpy", case)
    assert outcome.status != "failed", outcome.detail
    if outcome.status == "skipped":
        # Only what an ONNX model cannot say: a mix of libraries, a bool or None
        # attribute, a dtype ONNX lacks (datetimes).
        assert any(
            why in outcome.detail
            for why in ("nothing to mix", "attribute cannot hold", "no element type")
        ), outcome.detail


def test_the_onnx_column_skips_few_cases() -> None:
    outcomes = [run_onnx_case("numpy", case).status for case in CASES]
    assert outcomes.count("failed") == 0
    assert outcomes.count("skipped") <= 10
    assert outcomes.count("passed") >= len(CASES) - 10


def test_the_onnx_column_is_a_cpu_backends_only() -> None:
    from scatterx._cli import _columns

    records = [r for r in backends() if r.name in ("numpy", "numba", "dask", "cupy")]
    columns = _columns(records, ["native", "torch", "onnx"])
    assert {("numpy", "onnx"), ("numba", "onnx")} <= set(columns)
    assert ("dask", "onnx") not in columns  # Dask arrays: an evaluator hands NumPy arrays
    assert ("cupy", "onnx") not in columns  # GPU memory
    assert ("cupy", "torch") in columns  # the other libraries' columns as before
