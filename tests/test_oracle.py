"""The oracle itself: the ONNX text's printed results, and its complex product."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scatterx.testing import Case, onnx_node_cases, reference_scatter_elements, spec_cases

PRINTED = [c for c in [*spec_cases(), *onnx_node_cases()] if c.expected is not None]


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


def _onnx_node_tests() -> list[Any]:
    try:
        from onnx.backend.test.case.node import collect_testcases
    except ImportError:
        return []
    return list(collect_testcases("ScatterElements"))


@pytest.mark.skipif(not _onnx_node_tests(), reason="onnx is not installed")
def test_our_onnx_node_cases_are_onnx_own() -> None:
    ours = {c.name: c for c in onnx_node_cases()}
    theirs = _onnx_node_tests()
    assert len(theirs) == len(ours) == 7
    for test in theirs:
        name = "onnx-" + test.name.removeprefix("test_scatter_elements_")
        case = ours[name]
        (inputs, (output,)) = test.data_sets[0]
        attributes = {a.name: a for a in test.model.graph.node[0].attribute}
        assert int(attributes["axis"].i if "axis" in attributes else 0) == case.axis
        reduction = attributes["reduction"].s.decode() if "reduction" in attributes else "none"
        assert reduction == case.reduction
        for given, mine in zip(inputs, (case.data, case.indices, case.updates), strict=True):
            np.testing.assert_array_equal(given, mine)
        out = reference_scatter_elements(*inputs, axis=case.axis, reduction=case.reduction)
        np.testing.assert_allclose(out, output, rtol=1e-6)
