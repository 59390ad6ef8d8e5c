"""The oracle itself: the ONNX text's printed results, and its complex product."""

from __future__ import annotations

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
