"""gather_elements on the numba backend: the numpy backend's bits for every dtype, layout
and axis, the units a gather is cut into, the first bad index, automatic choice."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx._check import normalise_gather
from scatterx.testing import first_difference
from scatterx_numba import (
    SMALL_CALL_UPDATES,
    _checks,
    _gather,
    backend,
)
from scatterx_numba._views import GatherParams
from scatterx_numba.plan import call as _call
from scatterx_numba.plan import gather_launch as _gather_launch
from scatterx_numba.plan import launch as _launch
from scatterx_numba.plan import layout as _layout
from scatterx_numba.plan import strategy as _strategy

numba = pytest.importorskip("numba", reason="numba is not installed (the numba extra)")

Array = np.ndarray[Any, Any]
DTYPES = sorted(backend.capabilities)


@pytest.fixture
def two_threads() -> Iterator[None]:
    before = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    yield
    numba.set_num_threads(before)


@pytest.fixture
def small_units(monkeypatch: pytest.MonkeyPatch, two_threads: None) -> Iterator[None]:
    """Many tasks, narrow bands and chunks of rows even on small arrays."""
    monkeypatch.setattr(_strategy, "MIN_TASK_INDICES", 1)
    monkeypatch.setattr(_strategy, "GATHER_TASKS_PER_THREAD", 8)
    monkeypatch.setattr(_strategy, "SLAB_BYTES", 1)
    monkeypatch.setattr(_strategy, "LINE_BYTES", 2)
    _launch.cache_clear()  # plans are cached: made again from these constants
    yield
    _launch.cache_clear()


def _dtype(key: str) -> np.dtype[Any]:
    if key == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(key)


def _values(dtype: np.dtype[Any], rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Values whose bits a gather must carry: raw bool bytes (not only 0 and 1), -0.0,
    NaNs of many payloads, the extremes of integers."""
    if dtype.kind == "b":
        return rng.integers(0, 256, shape).astype(np.uint8).view(bool)
    native = dtype.newbyteorder("=")
    if dtype.kind in "iu":
        info = np.iinfo(native)
        return rng.integers(info.min, info.max, shape, dtype=native, endpoint=True).astype(dtype)
    values = (rng.standard_normal(shape) * 300).astype(dtype)
    if dtype.kind == "c":
        values.imag = rng.standard_normal(shape)
    flat = values.reshape(-1)
    flat[::7] = -0.0
    flat[3::5] = np.nan
    # NaNs of different payloads, in the real part of complex values
    nans = (flat.real if dtype.kind == "c" else flat)[3::5]
    words = {2: np.uint16, 4: np.uint32, 8: np.uint64}[nans.itemsize]
    nans.view(words)[:] ^= np.arange(nans.size, dtype=words) + 1
    return values


def _check(data: Array, indices: Array, axis: int) -> Array:
    """The numba gather, asserted to hold the numpy backend's dtype, shape and bytes."""
    got = scatterx.gather_elements(data, indices, axis=axis, backend="numba")
    want = scatterx.gather_elements(data, indices, axis=axis, backend="numpy")
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    assert got.flags.c_contiguous
    got_bytes = np.ascontiguousarray(got).view(np.uint8)
    want_bytes = np.ascontiguousarray(want).view(np.uint8)
    assert np.array_equal(got_bytes, want_bytes), first_difference(got, want)
    return got


def _random_indices(
    rng: np.random.Generator, data_shape: tuple[int, ...], axis: int, rows: int
) -> Array:
    """Indices of every sign, as long as ``rows`` along ``axis``, shorter than data off it."""
    shape = [max(1, n - 1) for n in data_shape]
    shape[axis] = rows
    size = data_shape[axis]
    return rng.integers(-size, size, shape)


def _int32_at_axis_1(key: str) -> list[Any]:
    """The test's parameters for ``key``: with int32 indices along axis 1 (True) on 4-byte
    elements by default (the conformance matrix's float32 rows compile that signature);
    on the other widths, each a signature of its own, with ``-m slow`` only."""
    itemsize = 2 if key == "bfloat16" else np.dtype(key).itemsize  # no ml_dtypes import
    if itemsize == 4:
        return [pytest.param(key, True, id=key)]
    slow = pytest.param(key, True, marks=pytest.mark.slow, id=f"{key}-int32")
    return [pytest.param(key, False, id=key), slow]


@pytest.mark.parametrize("order", ["native", "swapped"])
@pytest.mark.parametrize(("key", "int32"), [p for key in DTYPES for p in _int32_at_axis_1(key)])
def test_bits_equal_the_numpy_backend(key: str, int32: bool, order: str) -> None:
    dtype = _dtype(key)
    if order == "swapped":
        if dtype.itemsize == 1 or key == "bfloat16":
            pytest.skip("one byte, or no other byte order: nothing to swap")
        dtype = dtype.newbyteorder()
    rng = np.random.default_rng(DTYPES.index(key))
    data = _values(dtype, rng, (7, 6, 5))
    for axis in range(3):
        indices = _random_indices(rng, data.shape, axis, 9)
        _check(data, indices.astype(np.int32 if axis == 1 and int32 else np.int64), axis)


def _data_layouts(array: Array) -> dict[str, Array]:
    readonly = array.copy()
    readonly.flags.writeable = False
    raw = np.zeros(array.nbytes + 1, np.uint8)
    unaligned = raw[1:].view(array.dtype).reshape(array.shape)
    unaligned[...] = array
    return {
        "fortran": np.asfortranarray(array),
        "transposed": array.T.copy().T,
        "reversed": array[::-1, :, ::-1].copy()[::-1, :, ::-1],
        "strided": np.repeat(array, 2, axis=1)[:, ::2],
        "readonly": readonly,
        "unaligned": unaligned,
    }


@pytest.mark.parametrize("layout", list(_data_layouts(np.zeros((2, 2, 2)))))
@pytest.mark.parametrize("key", ["float32", "complex128"])
def test_data_layouts(key: str, layout: str) -> None:
    rng = np.random.default_rng(1)
    data = _data_layouts(_values(np.dtype(key), rng, (8, 7, 6)))[layout]
    before = data.copy()
    for axis in range(3):
        _check(data, _random_indices(rng, data.shape, axis, 10), axis)
    np.testing.assert_array_equal(data, before)


def _index_layouts(indices: Array) -> dict[str, Array]:
    readonly = indices.copy()
    readonly.flags.writeable = False
    return {
        "fortran": np.asfortranarray(indices),
        "reversed": indices[::-1, ::-1].copy()[::-1, ::-1],
        "int32": indices.astype(np.int32),
        "swapped": indices.astype(indices.dtype.newbyteorder()),
        "readonly": readonly,
        "broadcast": np.broadcast_to(indices[:1], indices.shape),
    }


@pytest.mark.parametrize("layout", list(_index_layouts(np.zeros((2, 2), np.int64))))
def test_index_layouts(layout: str) -> None:
    rng = np.random.default_rng(2)
    # float32: int32 indices then share the conformance matrix's signature (4-byte words).
    data = _values(np.dtype(np.float32), rng, (9, 8))
    for axis in range(2):
        _check(data, _index_layouts(_random_indices(rng, data.shape, axis, 11))[layout], axis)


@pytest.mark.parametrize("key", ["float32", "complex128", "bool"])
def test_rows_of_one_id_are_copied_whole(two_threads: None, key: str) -> None:
    rng = np.random.default_rng(3)
    data = _values(np.dtype(key), rng, (40, 96))
    indices = np.repeat(rng.integers(-40, 40, size=(300, 1)), 96, axis=1)
    indices[1::7, 5] = 0  # some rows mixed: they run element by element
    three_d = indices.reshape(1, 300, 96)
    ids = _checks.constant_rows((three_d[0, 0], three_d[-1, -1]))
    assert ids
    params, _ = _strategy.gather_plan(
        data.shape, indices.shape, 0, data.itemsize, 2, constant_rows=ids
    )
    assert params.band == 96
    _check(data, indices, 0)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_units_cut_across_rows_and_columns(small_units: None, axis: int) -> None:
    rng = np.random.default_rng(4)
    data = _values(np.dtype(np.float32), rng, (5, 12, 9))
    indices = _random_indices(rng, data.shape, axis, 13)
    params, n_tasks = _strategy.gather_plan(
        data.shape, indices.shape, axis, 4, 2, constant_rows=False
    )
    assert n_tasks > 2
    if axis < 2:
        assert params.n_bands > 1
    _check(data, indices, axis)


@pytest.mark.parametrize(
    ("data_shape", "index_shape", "axis", "rows", "expected"),
    [
        # embedding-grad: rows of one id are copied whole, rows shared among 4 tasks
        ((30000, 256), (16384, 256), 0, True, (GatherParams(True, 256, 1, 4), 4)),
        # square-random: bands of data that stay in cache
        ((4096, 4096), (4096, 4096), 0, False, (GatherParams(True, 32, 128, 1), 4)),
        # last-axis-sparse: one column per row, outer positions shared out
        ((8192, 1024), (8192, 64), 1, False, (GatherParams(True, 1, 1, 1), 4)),
        # a 1-D gather: chunks of the one row of units
        ((65536,), (4194304,), 0, False, (GatherParams(True, 1, 1, 4), 4)),
        # a small gather: one task
        ((50, 8), (100, 3), 0, False, (GatherParams(False, 3, 1, 1), 1)),
    ],
)
def test_units_from_shapes(
    data_shape: tuple[int, ...],
    index_shape: tuple[int, ...],
    axis: int,
    rows: bool,
    expected: tuple[GatherParams, int],
) -> None:
    assert (
        _strategy.gather_plan(data_shape, index_shape, axis, 4, 2, constant_rows=rows) == expected
    )


def _first_bad_cases() -> dict[str, tuple[Array, Array, int]]:
    rng = np.random.default_rng(5)
    data = rng.standard_normal((40, 64))
    columns = rng.integers(0, 40, (30, 64))
    # The first bad index in C order is in a later band than a later row's bad index.
    columns[20, 1], columns[10, 3], columns[25, 40] = 41, -41, 99
    ids = np.repeat(rng.integers(-40, 40, (30, 1)), 64, axis=1)
    ids[12, :], ids[20, :] = 40, -41
    last = rng.integers(-64, 64, (40, 50))
    last[33, 7], last[2, 49], last[2, 48] = 64, -65, 70
    return {"bands": (data, columns, 0), "ids": (data, ids, 0), "last-axis": (data, last, 1)}


@pytest.mark.parametrize("case", list(_first_bad_cases()))
@pytest.mark.parametrize("units", ["default", "small"])
def test_first_bad_index_in_c_order(
    request: pytest.FixtureRequest, two_threads: None, case: str, units: str
) -> None:
    if units == "small":
        request.getfixturevalue("small_units")
    data, indices, axis = _first_bad_cases()[case]
    with pytest.raises(IndexError) as expected:
        scatterx.gather_elements(data, indices, axis=axis, backend="numpy")
    with pytest.raises(IndexError) as got:
        scatterx.gather_elements(data, indices, axis=axis, backend="numba")
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize(
    ("data_shape", "index_shape", "axis"),
    [((4, 5), (0, 5), 0), ((4, 5), (3, 0), 0), ((4, 0), (3, 0), 1), ((0, 3), (0, 2), 0)],
)
def test_empty_indices(
    data_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int
) -> None:
    data = np.ones(data_shape, dtype=np.float16)
    _check(data, np.zeros(index_shape, dtype=np.int64), axis)


def test_no_index_is_valid_on_an_axis_of_no_length() -> None:
    data, indices = np.ones((0, 3)), np.zeros((2, 3), dtype=np.int64)
    with pytest.raises(IndexError) as expected:
        scatterx.gather_elements(data, indices, backend="numpy")
    with pytest.raises(IndexError) as got:
        scatterx.gather_elements(data, indices, backend="numba")
    assert str(got.value) == str(expected.value)


def test_small_gathers_go_to_numpy_in_automatic_choice() -> None:
    small = scatterx.explain_gather(np.zeros(10), np.array([1, 2]))
    assert small.backend == "numpy"
    assert small.reasons["numba"] == "2 indices: below 8192 numpy is faster than a parallel launch"
    n = SMALL_CALL_UPDATES
    assert scatterx.explain_gather(np.zeros(10), np.zeros(n, dtype=np.int64)).backend == "numba"
    wide = np.zeros((n // 64 - 1, 64), dtype=np.int64)
    assert scatterx.explain_gather(np.zeros((3, 64)), wide).backend == "numpy"


@pytest.mark.parametrize(
    ("layout", "key", "in_place"),
    [
        ("fortran", "float32", True),
        ("reversed", "int16", True),
        ("fortran", "complex128", False),  # two words per element: copied in C order
        ("unaligned", "float64", False),
    ],
)
def test_strided_data_is_read_where_it_lies(layout: str, key: str, in_place: bool) -> None:
    data = _data_layouts(np.arange(24).astype(key).reshape(2, 3, 4))[layout]
    width = _strategy.words(data.dtype)[1]
    call = _call.describe(normalise_gather(data, np.zeros((2, 1, 4), np.int64), 1))
    source = _gather._source(data, 1, _gather_launch.gather_launch_plan(call, 2).arrays.data)
    assert source.shape == (2, 3, 4 * width)
    assert np.shares_memory(source, data) == in_place
    assert not source.flags.writeable


def test_dimensions_that_do_not_merge_are_copied() -> None:
    data = np.asfortranarray(np.zeros((2, 3, 4), np.float32))
    assert _layout.three_d_view(data, 1) is not None
    assert _layout.three_d_view(data, 0) is None  # (3, 4) in Fortran order: not one row
