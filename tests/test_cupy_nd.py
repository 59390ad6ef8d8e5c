"""scatter_nd and gather_nd of the cupy backend on a GPU, bit for bit against the oracles.

Skipped with the backend's reason where cupy or a CUDA device is missing. The checks are
those that ``tests/test_cupy_nd_emulated.py`` runs on the host emulation of the kernels,
here on cupy arrays: every strategy forced (the fast paths' included, whatever the opt-in
says), gathers with ``batch_dims``, ``out=`` and in place, bad indices; then the public
functions. The conformance matrix (tests/test_conformance.py) runs the generated ND cases.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx.testing import assert_bitwise_equal, reference_gather_nd
from scatterx.testing._oracle_nd import reference_scatter_nd_with_free_nans
from scatterx_cupy import CupyBackend
from test_cupy_nd_emulated import (
    DTYPES,
    GATHER_GEOMETRIES,
    SCATTER_GEOMETRIES,
    check_bad_index_writes_nothing,
    check_gather,
    check_out_and_in_place,
    check_scatter_strategies,
    gather_case,
    scatter_case,
)

_REASON = CupyBackend().available()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"cupy backend: {_REASON}")

#: The dtypes of the emulated tests, and those the emulator leaves out.
GPU_DTYPES = [*DTYPES, "int8", "uint16", "int64", "uint64", "complex128"]


def _to_device(array: np.ndarray[Any, Any]) -> Any:
    import cupy

    return cupy.asarray(array)


def _to_host(array: Any) -> np.ndarray[Any, Any]:
    return np.asarray(array.get())


@pytest.mark.parametrize("geometry", SCATTER_GEOMETRIES)
@pytest.mark.parametrize("dtype", GPU_DTYPES)
def test_every_strategy_matches_the_oracle(dtype: str, geometry: Any) -> None:
    check_scatter_strategies(dtype, geometry, _to_device, _to_host)


@pytest.mark.parametrize("geometry", GATHER_GEOMETRIES)
@pytest.mark.parametrize("dtype", GPU_DTYPES)
def test_gather_matches_the_oracle(dtype: str, geometry: Any) -> None:
    check_gather(dtype, geometry, _to_device, _to_host)


def test_out_and_in_place() -> None:
    check_out_and_in_place(_to_device, _to_host)


def test_bad_index_writes_nothing() -> None:
    check_bad_index_writes_nothing(_to_device, _to_host)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_public_functions_choose_cupy(reduction: str) -> None:
    """scatterx.scatter_nd and gather_nd on cupy arrays run here, and give the oracle's bits
    on a strided (non-C-ordered) data, into a Fortran-ordered out."""
    import cupy

    data, indices, updates = scatter_case("float32", ((9, 7, 5), (60, 1)))
    on_device = [cupy.asarray(a) for a in (data, indices, updates)]
    assert scatterx.explain_nd(*on_device, reduction=reduction).backend == "cupy"
    expected, free = reference_scatter_nd_with_free_nans(data, indices, updates, reduction)
    got = scatterx.scatter_nd(*on_device, reduction=reduction)
    assert isinstance(got, cupy.ndarray)
    assert_bitwise_equal(got.get(), expected, any_nan=free)
    out = cupy.asfortranarray(cupy.zeros_like(on_device[0]))
    assert scatterx.scatter_nd(*on_device, reduction=reduction, out=out) is out
    assert_bitwise_equal(out.get(), expected, any_nan=free)
    strided = cupy.asarray(np.ascontiguousarray(np.swapaxes(data, 1, 2))).swapaxes(1, 2)
    got = scatterx.scatter_nd(strided, *on_device[1:], reduction=reduction)
    assert_bitwise_equal(got.get(), expected, any_nan=free)


def test_public_gather_with_batch_dims() -> None:
    import cupy

    data, indices, batch = gather_case("float64", ((3, 7, 5), (3, 8, 1), 1))
    got = scatterx.gather_nd(cupy.asarray(data), cupy.asarray(indices), batch_dims=batch)
    assert isinstance(got, cupy.ndarray)
    assert_bitwise_equal(got.get(), reference_gather_nd(data, indices, batch))
