"""The conformance matrix's scatter_nd and gather_nd cases: what they cover, the runner's
checks on them (each shown able to fail), their one-node models, and onnxruntime's answers
on the duplicate-free generated ones. The matrix itself runs in test_conformance.py."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np
import pytest

import scatterx
from _backends import Result, WrongBackend
from scatterx.testing import (
    ScatterNDCase,
    assert_bitwise_equal,
    first_difference,
    matrix_cases,
    nd_cases,
    run_case,
    scoped_registry,
)
from scatterx.testing._generated import dtypes
from scatterx.testing._nd_generated import GATHER_LAYOUTS, SCATTER_LAYOUTS
from scatterx.testing._onnx_cases import one_node_model, run_onnx_case
from scatterx.testing.conformance import _param

CASES = nd_cases()
BY_NAME = {case.name: case for case in CASES}
SCATTER = BY_NAME["scatter-nd-float32-none-4x5-k2"]  # rows (5, 2), the last repeating the first
GATHER = BY_NAME["gather-nd-float32-3x4x2-b1-k2"]


# What the cases cover ----------------------------------------------------------------------


def _succeeding(operation: str) -> list[Any]:
    return [c for c in CASES if c.operation == operation and c.error is None]


def test_the_nd_cases_are_named_uniquely_and_follow_the_others() -> None:
    names = [case.name for case in matrix_cases()]
    assert len(names) == len(set(names))
    operations = [case.operation for case in matrix_cases()]
    assert operations[-len(CASES) :] == [case.operation for case in CASES]
    assert Counter(case.operation for case in CASES) == {"scatter_nd": 230, "gather_nd": 106}


def test_every_rank_depth_and_batch_dims_is_generated() -> None:
    scatters = {(c.data.ndim, c.indices.shape[-1]) for c in _succeeding("scatter_nd")}
    assert scatters >= {(r, k) for r in range(1, 5) for k in range(1, r + 1)}
    gathers = {(c.data.ndim, c.batch_dims, c.indices.shape[-1]) for c in _succeeding("gather_nd")}
    assert gathers >= {
        (r, b, k) for r in range(1, 5) for b in range(3) if b < r for k in range(1, r - b + 1)
    }
    assert len(SCATTER_LAYOUTS) == 10
    assert len(GATHER_LAYOUTS) == 19


def test_every_dtype_and_reduction_has_duplicates_and_negative_indices() -> None:
    keys = set(dtypes())
    scatters = _succeeding("scatter_nd")
    repeated = Counter(
        (c.dtype_key, c.reduction) for c in scatters if _has_duplicate_rows(c.data, c.indices)
    )
    defined = {(k, r) for k in keys for r in scatterx.REDUCTIONS if r in _reductions(k)}
    assert set(repeated) == defined
    assert {c.dtype_key for c in scatters if (c.indices < 0).any()} == keys
    assert {c.dtype_key for c in _succeeding("gather_nd")} == keys
    assert any(c.indices.size == 0 for c in scatters)
    assert any(c.indices.size == 0 for c in _succeeding("gather_nd"))


def _reductions(key: str) -> frozenset[str]:
    from scatterx._dtypes import DTYPE_REDUCTIONS

    return DTYPE_REDUCTIONS[key]


def _slices_named(data: Any, indices: Any) -> set[tuple[int, ...]]:
    """The slices of data that the rows of indices name, negative indices made positive."""
    depth = indices.shape[-1]
    rows = indices.reshape(-1, depth) % np.array(data.shape[:depth])
    return {tuple(int(i) for i in row) for row in rows}


def _has_duplicate_rows(data: Any, indices: Any) -> bool:
    return len(_slices_named(data, indices)) < indices.size // indices.shape[-1]


def test_the_errors_cover_bounds_depth_and_updates_shape() -> None:
    errors = {c.name: c.error for c in CASES if c.error is not None}
    assert errors["scatter-nd-error-index-too-large"] is IndexError
    assert errors["gather-nd-error-index-too-negative"] is IndexError
    assert errors["scatter-nd-error-depth-past-rank"] is ValueError
    assert errors["gather-nd-error-depth-zero"] is ValueError
    assert errors["scatter-nd-error-updates-shape"] is ValueError
    assert errors["gather-nd-error-batch-dims-unequal"] is ValueError


# The runner on them: the same checks as for the elements' cases ---------------------------


class WrongND(WrongBackend):
    """Both ND operations for ``dtypes`` only: numpy's answer, then ``wrong(answer, request)``."""

    def __init__(self, name: str, wrong: Result, dtypes: tuple[str, ...] = ("float32",)) -> None:
        super().__init__(name, wrong)
        self.dtypes = dtypes
        self.capabilities = {key: frozenset(scatterx.REDUCTIONS) for key in dtypes}

    def can_run(self, request: Any) -> str | None:
        return None if request.dtype_key in self.dtypes else "not that dtype"

    def scatter_nd(self, request: scatterx.backend.ScatterNDRequest) -> Any:
        data, indices, updates = (np.asarray(a) for a in request.arrays)
        reduction = request.reduction
        answer = scatterx.scatter_nd(data, indices, updates, reduction=reduction, backend="numpy")
        return self.wrong(answer, request)

    def gather_nd(self, request: scatterx.backend.GatherNDRequest) -> Any:
        data, indices = (np.asarray(a) for a in request.arrays)
        answer = scatterx.gather_nd(data, indices, batch_dims=request.batch_dims, backend="numpy")
        return self.wrong(answer, request)


def _run(backend: WrongBackend, case: Any, library: str | None = None) -> Any:
    with scoped_registry(backend):
        return run_case(backend.name, case, library=library)


def _rows_reversed(answer: Any, request: Any) -> Any:
    """The rows applied last to first: the first of two rows on one slice wins."""
    data, indices, updates = (np.asarray(a) for a in request.arrays)
    return scatterx.scatter_nd(data, indices[::-1], updates[::-1], backend="numpy")


@pytest.mark.parametrize("case", [SCATTER, GATHER], ids=["scatter_nd", "gather_nd"])
def test_a_right_nd_backend_passes(case: Any) -> None:
    outcome = _run(WrongND("right", lambda answer, request: answer), case)
    assert (outcome.status, outcome.detail) == ("passed", "")


@pytest.mark.parametrize(
    ("case", "wrong", "detail"),
    [
        (SCATTER, _rows_reversed, "1 of 20 elements differ"),
        (SCATTER, lambda answer, request: answer[:-1], "shape (3, 5) differs"),
        (GATHER, lambda answer, request: answer[::-1], "elements differ"),
        (GATHER, lambda answer, request: answer.astype(np.float64), "dtype float64 differs"),
    ],
    ids=["rows-reversed", "scatter-shape", "gather-batches-swapped", "gather-dtype"],
)
def test_a_wrong_nd_backend_fails(case: Any, wrong: Result, detail: str) -> None:
    outcome = _run(WrongND("wrong", wrong), case)
    assert outcome.status == "failed"
    assert detail in outcome.detail


def test_a_backend_without_the_nd_operations_skips_their_cases() -> None:
    scatters_only = WrongBackend("scatters-only", lambda answer, request: answer)
    for case in (SCATTER, GATHER):
        outcome = _run(scatters_only, case)
        assert (outcome.status, outcome.detail) == (
            "skipped",
            f"scatters-only has no {case.operation}",
        )
        with scoped_registry(scatters_only):
            assert run_onnx_case("scatters-only", case).detail.endswith(case.operation)


def test_declining_a_dtype_is_a_skip_unless_advertised() -> None:
    int64_case = BY_NAME["scatter-nd-int64-add-4x5-k1"]
    outcome = _run(WrongND("narrow", lambda answer, request: answer), int64_case)
    assert (outcome.status, outcome.detail) == ("skipped", "narrow declines int64 scatter_nd add")
    int64_gather = dataclasses.replace(GATHER, data=GATHER.data.astype(np.int64))
    outcome = _run(WrongND("narrow", lambda answer, request: answer), int64_gather)
    assert (outcome.status, outcome.detail) == ("skipped", "narrow declines int64 gather_nd")
    claiming = WrongND("claiming", lambda answer, request: answer)
    claiming.capabilities = {"int64": frozenset({"add"})}  # but it runs float32 only
    outcome = _run(claiming, int64_case)
    assert outcome.status == "failed"
    assert outcome.detail.startswith("declined a call its capabilities advertise: ")


def test_a_backend_writing_its_input_fails() -> None:
    def writes(answer: Any, request: Any) -> Any:
        request.data[...] = 0
        return answer

    outcome = _run(WrongND("writer", writes), SCATTER)
    assert (outcome.status, outcome.detail.split(":")[0]) == ("failed", "data was modified")


def test_nd_ids_and_groups_name_the_operation() -> None:
    scatter, gather = _param("numba", "torch", SCATTER), _param("numba", "native", GATHER)
    assert scatter.id == "numba-torch-scatter-nd-float32-none-4x5-k2"
    assert gather.id == "numba-gather-nd-float32-3x4x2-b1-k2"
    assert [m.args for m in (*scatter.marks, *gather.marks)] == [
        ("float32-none",),
        ("float32-gather",),
    ]


def test_one_node_models_are_scatter_nd_18_and_gather_nd_13() -> None:
    pytest.importorskip("onnx")
    for case, op_type, opset, attributes in [
        (SCATTER, "ScatterND", 18, ["reduction"]),
        (GATHER, "GatherND", 13, ["batch_dims"]),
        (dataclasses.replace(GATHER, batch_dims=0), "GatherND", 13, []),
    ]:
        model = one_node_model(case)
        (node,) = model.graph.node
        assert (node.op_type, model.opset_import[0].version) == (op_type, opset)
        assert [a.name for a in node.attribute] == attributes


# onnxruntime on the duplicate-free generated cases ------------------------------------------

GENERATED = [c for c in CASES if "-generated:" in c.family]


def _distinct_rows(case: ScatterNDCase) -> ScatterNDCase:
    """``case`` with each slice's first row only (ONNX leaves repeated rows undefined)."""
    data, indices, updates = (np.asarray(a) for a in case.arrays)
    depth = indices.shape[-1]
    rows = indices.reshape(-1, depth)
    slices = updates.reshape(len(rows), *data.shape[depth:])
    flat = np.ravel_multi_index(tuple((rows % np.array(data.shape[:depth])).T), data.shape[:depth])
    keep = np.sort(np.unique(flat, return_index=True)[1])
    return dataclasses.replace(case, indices=rows[keep], updates=slices[keep])


def _onnxruntime(case: Any) -> Any:
    """onnxruntime's answer for the case's one-node model, or a skip with its refusal."""
    ort = pytest.importorskip("onnxruntime")
    if case.dtype_key in ("bytes_", "bfloat16"):
        pytest.skip(f"onnxruntime's Python API takes no {case.dtype_key} arrays")
    options = ort.SessionOptions()
    options.log_severity_level = 4
    feeds = {
        role: a.astype(object) if a.dtype.kind in "TU" else a
        for role, a in zip(case.roles, case.arrays, strict=True)
    }
    try:
        model = one_node_model(case).SerializeToString()
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        (result,) = session.run(None, feeds)
    except Exception as exc:  # onnxruntime's own exception types
        refusals = ("not supported", "not currently registered")
        if any(why in str(exc) for why in refusals):
            pytest.skip(f"onnxruntime refuses it: {str(exc).splitlines()[0].rpartition(': ')[2]}")
        raise
    return np.asarray(result)


@pytest.mark.parametrize("case", GENERATED, ids=[c.name for c in GENERATED])
def test_nd_equals_onnxruntime_without_duplicate_rows(case: Any) -> None:
    pytest.importorskip("onnx")
    if isinstance(case, ScatterNDCase):
        case = _distinct_rows(case)
    expected = _onnxruntime(case)
    function = getattr(scatterx, case.operation)
    got = function(*case.arrays, **case.kwargs())
    if got.dtype.kind in "TU":
        assert first_difference(got.astype(object), expected) is None
    else:
        assert_bitwise_equal(got, expected)


def test_the_onnxruntime_comparison_keeps_one_row_per_slice() -> None:
    for case in (c for c in GENERATED if isinstance(c, ScatterNDCase)):
        distinct = _distinct_rows(case)
        assert not _has_duplicate_rows(distinct.data, distinct.indices)
        assert _slices_named(distinct.data, distinct.indices) == _slices_named(
            case.data, case.indices
        )
