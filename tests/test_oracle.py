"""The oracles themselves: the ONNX text's printed results, ONNX's own node tests, the
scatter's complex product, and the gather against NumPy's take_along_axis."""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from scatterx.testing import (
    Case,
    GatherCase,
    assert_bitwise_equal,
    gather_cases,
    gather_onnx_node_cases,
    onnx_node_cases,
    reference_gather_elements,
    reference_scatter_elements,
    spec_cases,
)
from scatterx.testing._onnx_cases import onnx_node_tests

PRINTED = [c for c in [*spec_cases(), *onnx_node_cases()] if c.expected is not None]
GATHERS = [c for c in gather_cases() if c.error is None]
OUT_OF_BOUNDS = [c for c in gather_cases() if c.error is IndexError]


@pytest.mark.parametrize("case", PRINTED, ids=[c.name for c in PRINTED])
def test_oracle_gives_the_results_printed_in_onnx(case: Case) -> None:
    out = reference_scatter_elements(
        case.data, case.indices, case.updates, case.axis, case.reduction
    )
    np.testing.assert_allclose(out, case.expected, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_product_is_the_textbook_formula_without_fma(dtype: type) -> None:
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(2000) + 1j * rng.standard_normal(2000)).astype(dtype)
    b = (rng.standard_normal(2000) + 1j * rng.standard_normal(2000)).astype(dtype)
    for x, y in zip(a, b, strict=True):
        product = reference_scatter_elements(
            np.array([x]), np.array([0]), np.array([y]), reduction="mul"
        )[0]
        real = x.real * y.real - x.imag * y.imag
        imag = x.real * y.imag + x.imag * y.real
        assert (product.real, product.imag) == (real, imag)


@functools.cache
def _all_onnx_node_tests() -> tuple[Any, ...]:
    """ONNX's node tests of the operators scatterx serves, collected once per process
    (shared with tests/test_onnx_conformance.py: collecting costs seconds)."""
    if importlib.util.find_spec("onnx") is None:
        return ()
    return onnx_node_tests()


def _onnx_node_tests(op_type: str) -> list[Any]:
    return [t for t in _all_onnx_node_tests() if t.model.graph.node[0].op_type == op_type]


def _paired_with_onnx(
    op_type: str, ours: list[Any], count: int, prefix: str
) -> Iterator[tuple[Any, Any, Any, dict[str, Any]]]:
    """Each of ONNX's ``count`` node tests of ``op_type`` with our case of its name (ours
    begin with ``prefix``; all of them are ONNX's), once their axes are checked equal: the
    case, ONNX's inputs and output, and the node's attributes."""
    named = {c.name: c for c in ours}
    theirs = _onnx_node_tests(op_type)
    assert len(theirs) == len(named) == count
    onnx_prefix = f"test_{ours[0].operation}_"  # test_scatter_elements_, say
    for test in theirs:
        case = named[prefix + test.name.removeprefix(onnx_prefix)]
        (inputs, (output,)) = test.data_sets[0]
        attributes = {a.name: a for a in test.model.graph.node[0].attribute}
        assert int(attributes["axis"].i if "axis" in attributes else 0) == case.axis
        yield case, inputs, output, attributes


@pytest.mark.skipif(not _all_onnx_node_tests(), reason="onnx is not installed")
def test_our_onnx_node_cases_are_onnx_own() -> None:
    pairs = _paired_with_onnx("ScatterElements", onnx_node_cases(), 7, "onnx-")
    for case, inputs, output, attributes in pairs:
        reduction = attributes["reduction"].s.decode() if "reduction" in attributes else "none"
        assert reduction == case.reduction
        for given, mine in zip(inputs, (case.data, case.indices, case.updates), strict=True):
            np.testing.assert_array_equal(given, mine)
        out = reference_scatter_elements(*inputs, axis=case.axis, reduction=case.reduction)
        np.testing.assert_allclose(out, output, rtol=1e-6)


@pytest.mark.skipif(not _all_onnx_node_tests(), reason="onnx is not installed")
def test_our_gather_onnx_node_cases_are_onnx_own() -> None:
    pairs = _paired_with_onnx("GatherElements", gather_onnx_node_cases(), 3, "gather-onnx-")
    for case, (data, indices), output, _ in pairs:
        for given, mine in zip((data, indices, output), (*case.arrays, case.expected), strict=True):
            assert given.dtype == mine.dtype
            np.testing.assert_array_equal(given, mine)
        assert_bitwise_equal(reference_gather_elements(data, indices, axis=case.axis), output)


def _take_along_axis(case: GatherCase) -> np.ndarray[Any, Any]:
    """GatherElements by NumPy: data cut to the shape of indices off the axis, then
    take_along_axis (whose fancy indexing copies bytes: bools as they are)."""
    data, indices = np.asarray(case.data), np.asarray(case.indices)
    axis = case.axis % data.ndim
    cut = tuple(slice(None) if d == axis else slice(n) for d, n in enumerate(indices.shape))
    taken = np.take_along_axis(data[cut], indices, axis=axis)
    if taken.dtype.kind == "b":  # the contract reads any nonzero byte as True, as 0/1
        return np.not_equal(taken.view(np.uint8), 0)
    return taken


@pytest.mark.parametrize("case", GATHERS, ids=[c.name for c in GATHERS])
def test_gather_oracle_is_take_along_axis(case: GatherCase) -> None:
    expected = _take_along_axis(case)
    assert_bitwise_equal(reference_gather_elements(case.data, case.indices, case.axis), expected)


@pytest.mark.parametrize("case", OUT_OF_BOUNDS, ids=[c.name for c in OUT_OF_BOUNDS])
def test_gather_oracle_names_the_first_bad_index_in_c_order(case: GatherCase) -> None:
    assert case.match is not None
    with pytest.raises(IndexError, match=case.match):
        reference_gather_elements(case.data, case.indices, case.axis)
