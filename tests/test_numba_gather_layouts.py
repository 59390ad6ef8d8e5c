"""gather_elements on the numba backend with data and indices both strided (a transposed
gather: read where they lie), into a new result and into the caller's ``out``, whose
check of every index reads the indices in their own order and names the first bad one
in C order; and the one-column units (a gather along the last axis)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx._check import normalise_gather
from scatterx.testing import first_difference
from scatterx_numba.plan import call as _call
from scatterx_numba.plan import gather_launch as _gather_launch

pytest.importorskip("numba", reason="numba is not installed (the numba extra)")

Array = np.ndarray[Any, Any]


def _same_bits(got: Array, want: Array) -> None:
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    got_bytes = np.ascontiguousarray(got).view(np.uint8)
    want_bytes = np.ascontiguousarray(want).view(np.uint8)
    assert np.array_equal(got_bytes, want_bytes), first_difference(got, want)


def _fortran_case(
    key: str, shape: tuple[int, ...], axis: int, rows: int, seed: int
) -> tuple[Array, Array]:
    rng = np.random.default_rng(seed)
    data = np.asfortranarray(rng.integers(-1000, 1000, shape).astype(key))
    index_shape = [max(1, n - 1) for n in shape]
    index_shape[axis] = rows
    size = shape[axis]
    indices = np.asfortranarray(rng.integers(-size, size, index_shape))
    return data, indices


CASES = [
    ("float32", (40, 70), 0),
    ("float32", (40, 70), 1),
    ("int16", (6, 9, 11), 1),  # the middle axis: each side merges in Fortran order
    ("float64", (6, 9, 11), 2),
    ("float32", (6, 9, 11), 0),  # the far side does not merge: indices copied in C order
]


@pytest.mark.parametrize(("key", "shape", "axis"), CASES)
@pytest.mark.parametrize("into_out", [False, True])
def test_transposed_gather(key: str, shape: tuple[int, ...], axis: int, into_out: bool) -> None:
    data, indices = _fortran_case(key, shape, axis, 13, 1)
    want = scatterx.gather_elements(data, indices, axis=axis, backend="numpy")
    out = np.full(indices.shape, 7, data.dtype) if into_out else None
    got = scatterx.gather_elements(data, indices, axis=axis, out=out, backend="numba")
    assert got is out or out is None
    _same_bits(got, want)


def test_fortran_indices_are_read_where_they_lie() -> None:
    data, indices = _fortran_case("float32", (40, 70), 0, 30, 2)
    call = _call.describe(normalise_gather(data, indices, 0))
    assert call.index_flags == (False, True)
    plan = _gather_launch.gather_launch_plan(call, 2)
    assert plan.arrays.idx.flags == (False, True)
    assert plan.check == 0
    into = _call.describe(normalise_gather(data, indices, 0, np.empty((30, 69), np.float32)))
    assert _gather_launch.gather_launch_plan(into, 2).check == 1
    assert _gather_launch.gather_launch_plan(into, 2, constant_rows=True).check == 2


def _bad_cases() -> dict[str, tuple[Array, Array, int]]:
    data, indices = _fortran_case("float32", (40, 70), 0, 30, 3)
    # In memory (Fortran) order (2, 5) comes first; in C order (1, 60) does.
    indices[2, 5], indices[1, 60] = 40, -41
    last = np.asfortranarray(np.random.default_rng(4).integers(-70, 70, (39, 50)))
    last[30, 1], last[3, 40] = 70, 99
    ids = np.repeat(np.random.default_rng(6).integers(-40, 40, (30, 1)), 64, axis=1)
    ids[3, 9] = 0  # a mixed row, checked element by element
    ids[12, :], ids[20, :] = 40, -41
    mixed = ids.copy()
    mixed[5, 30] = 45  # the first bad index, in a mixed row
    return {
        "columns": (data, indices, 0),
        "rows": (data, last, 1),
        "ids": (data[:, :64], ids, 0),
        "ids-mixed": (data[:, :64], mixed, 0),
    }


@pytest.mark.parametrize("case", list(_bad_cases()))
@pytest.mark.parametrize("into_out", [False, True])
def test_first_bad_index_in_c_order(case: str, into_out: bool) -> None:
    data, indices, axis = _bad_cases()[case]
    with pytest.raises(IndexError) as expected:
        scatterx.gather_elements(data, indices, axis=axis, backend="numpy")
    out = np.full(indices.shape, 7, data.dtype) if into_out else None
    with pytest.raises(IndexError) as got:
        scatterx.gather_elements(data, indices, axis=axis, out=out, backend="numba")
    assert str(got.value) == str(expected.value)
    if out is not None:
        assert (out == 7).all()  # untouched


@pytest.mark.parametrize("key", ["bool", "float32", "complex128"])
@pytest.mark.parametrize("into_out", [False, True])
def test_last_axis_columns(key: str, into_out: bool) -> None:
    rng = np.random.default_rng(5)
    data = rng.integers(0, 3, (300, 50)).astype(key)
    indices = rng.integers(-50, 50, (299, 7))  # shorter than data off the axis: mapped
    want = scatterx.gather_elements(data, indices, axis=1, backend="numpy")
    out = np.zeros(indices.shape, data.dtype) if into_out else None
    _same_bits(scatterx.gather_elements(data, indices, axis=1, out=out, backend="numba"), want)


@pytest.mark.parametrize("key", ["float32", "complex128", "bool"])
def test_rows_of_one_id_into_out(key: str) -> None:
    """A plan of constant rows into out: the check notes which rows hold one value, and
    the gather copies those whole and the others element by element."""
    rng = np.random.default_rng(7)
    data = rng.integers(0, 3, (40, 96)).astype(key)
    indices = np.repeat(rng.integers(-40, 40, size=(300, 1)), 96, axis=1)
    indices[1::7, 5] = 0
    want = scatterx.gather_elements(data, indices, axis=0, backend="numpy")
    out = np.zeros(indices.shape, data.dtype)
    assert scatterx.gather_elements(data, indices, axis=0, out=out, backend="numba") is out
    _same_bits(out, want)
