"""The cupy backend on a GPU: every strategy against the oracle, errors, devices, streams.

Skipped with the backend's reason where cupy or a CUDA device is missing; the
conformance suite (tests/test_conformance.py) covers the full case matrix. The fast paths'
strategies are forced here whatever the opt-in says; tools/gpu_check.sh runs this file and
the conformance matrix again with SCATTERX_CUPY_FAST_PATHS=1, so that automatic choice
takes them too. Gathers are compared with the numpy backend's, bit for bit, on every
layout of data and indices.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest

import scatterx
from _cupy_emulation import case_arrays
from scatterx.testing import (
    assert_bitwise_equal,
    reference_scatter_elements,
    reference_with_free_nans,
)
from scatterx_cupy import CupyBackend, _run
from scatterx_cupy._compile import uses_atomics, uses_winners
from scatterx_cupy._run import scatter_elements as run_strategy
from test_cupy_emulated import (
    BAD_INDEX,
    GATHER_BAD_INDEX,
    GATHER_GEOMETRIES,
    LAYOUTS,
    assert_bad_gathers_raise,
    bad_index_call,
    gather_conformance_arrays,
    gather_expected,
)
from test_cupy_out_emulated import STRATEGY_CASES, check_out_modes

_REASON = CupyBackend().available()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"cupy backend: {_REASON}")

DTYPES = [
    "bool",
    "int8",
    "uint16",
    "int32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def _values(rng: np.random.Generator, dtype: np.dtype[Any], shape: tuple[int, ...]) -> Any:
    if dtype.kind == "b":
        return rng.random(shape) < 0.7
    if dtype.kind in "iu":
        return rng.integers(0, 256, shape).astype(dtype)
    values = rng.standard_normal(shape) * 3
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    values = values.astype(dtype)
    values.reshape(-1)[::17] = np.nan  # NaN and signed zeros: the order-sensitive bits
    values.reshape(-1)[5::23] = -0.0
    return values


def _case(
    dtype: str, reduction: str, shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int
) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(zlib.crc32(repr((dtype, reduction, shape, axis)).encode()))
    dt = np.dtype(dtype)
    data = _values(rng, dt, shape)
    indices = rng.integers(-shape[axis], shape[axis], index_shape)
    return data, indices, _values(rng, dt, index_shape)


def _check(strategy: str | None, dtype: str, reduction: str, geometry: Any) -> None:
    import cupy

    data, indices, updates = _case(dtype, reduction, *geometry)
    axis = geometry[2]
    expected, free_nans = reference_with_free_nans(
        data, indices, updates, axis=axis, reduction=reduction
    )
    arrays = [cupy.asarray(a) for a in (data, indices, updates)]
    request = scatterx._check.normalise(*arrays, axis, reduction)
    result = run_strategy(request, force=strategy)
    assert_bitwise_equal(result.get(), expected, any_nan=free_nans)


GEOMETRIES = [((40,), (300,), 0), ((9, 7, 5), (12, 6, 5), 0), ((6, 33, 4), (5, 40, 3), 1)]
#: The axis innermost in indices (warps), including a partial last chunk of 32 steps.
LAST_AXIS = [((40,), (300,), 0), ((6, 33), (5, 70), 1), ((3, 2, 9), (3, 2, 33), 2)]


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=["1d", "axis0", "axis1"])
@pytest.mark.parametrize("strategy", ["columns", "sort", "rows"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_ordered_strategies_match_the_oracle(strategy: str, dtype: str, geometry: Any) -> None:
    for reduction in scatterx.DTYPE_REDUCTIONS[dtype]:
        if strategy == "rows" and uses_atomics(dtype, reduction):
            continue
        _check(strategy, dtype, reduction, geometry)


@pytest.mark.parametrize("geometry", LAST_AXIS, ids=["1d", "axis1", "axis2"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_warps_match_the_oracle(dtype: str, geometry: Any) -> None:
    for reduction in scatterx.DTYPE_REDUCTIONS[dtype]:
        if not uses_atomics(dtype, reduction):
            _check("warps", dtype, reduction, geometry)


@pytest.mark.parametrize("geometry", GEOMETRIES + LAST_AXIS[1:])
@pytest.mark.parametrize("dtype", DTYPES)
def test_winners_match_the_oracle(dtype: str, geometry: Any) -> None:
    for reduction in scatterx.DTYPE_REDUCTIONS[dtype]:
        if uses_winners(dtype, reduction):
            _check("winner", dtype, reduction, geometry)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("shape", "index_shape", "axis"),
    [((7, 3, 4), (50, 3, 4), 0), ((2, 7, 3, 4), (2, 50, 3, 2), 1), ((9, 40), (300, 33), 0)],
)
def test_rows_of_one_target_match_the_oracle(
    dtype: str, shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int
) -> None:
    """Indices constant along the inner dims (an embedding's backward): the rows walk."""
    import cupy

    for reduction in scatterx.DTYPE_REDUCTIONS[dtype]:
        if uses_atomics(dtype, reduction):
            continue
        data, indices, updates = _case(dtype, reduction, shape, index_shape, axis)
        row = indices[(slice(None),) * (axis + 1) + (0,) * (indices.ndim - axis - 1)]
        indices = np.broadcast_to(
            row.reshape(row.shape + (1,) * (indices.ndim - axis - 1)), indices.shape
        )
        indices = np.where(  # either sign of the same row index
            np.arange(indices.size).reshape(indices.shape) % 2,
            indices,
            indices % shape[axis] - shape[axis],
        )
        expected, free_nans = reference_with_free_nans(
            data, indices, updates, axis=axis, reduction=reduction
        )
        arrays = [cupy.asarray(np.ascontiguousarray(a)) for a in (data, indices, updates)]
        request = scatterx._check.normalise(*arrays, axis, reduction)
        result = run_strategy(request, force="rows")
        assert_bitwise_equal(result.get(), expected, any_nan=free_nans)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_atomics_match_the_oracle(dtype: str, reduction: str) -> None:
    for geometry in GEOMETRIES:
        _check("atomics", dtype, reduction, geometry)


def test_float_add_with_many_repeats_is_the_sequential_sum() -> None:
    _check(None, "float32", "add", ((3,), (50_000,), 0))
    _check(None, "float16", "mul", ((2, 5000), (2, 5000), 1))


@pytest.mark.parametrize(("strategy", "dtype", "reduction", "rows", "axis"), BAD_INDEX)
def test_first_bad_index_in_c_order_raises_like_numpy(
    strategy: str, dtype: str, reduction: str, rows: bool, axis: int
) -> None:
    import cupy

    arrays, message = bad_index_call(dtype, reduction, rows, axis)
    request = scatterx._check.normalise(*(cupy.asarray(a) for a in arrays), axis, reduction)
    with pytest.raises(IndexError) as on_gpu:
        run_strategy(request, force=strategy)
    assert str(on_gpu.value) == message


def test_result_is_on_the_device_of_data_and_inputs_untouched() -> None:
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    with cupy.cuda.Device(count - 1):
        data = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)[:, ::2]  # a strided view
        indices = cupy.asarray([[2, 0], [1, 1]])
        updates = cupy.asarray([[5.0, 6.0], [7.0, 8.0]], dtype=cupy.float32)
    before = data.get()
    result = scatterx.scatter_elements(data, indices, updates, reduction="add")
    assert isinstance(result, cupy.ndarray)
    assert result.device.id == count - 1
    assert_bitwise_equal(data.get(), before)
    expected = reference_scatter_elements(before, indices.get(), updates.get(), reduction="add")
    assert_bitwise_equal(result.get(), expected)


def test_runs_on_the_current_stream() -> None:
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    data = cupy.zeros(1 << 20, dtype=cupy.float32)
    indices = cupy.arange(1 << 20) % 1000
    updates = cupy.ones(1 << 20, dtype=cupy.float32)
    with stream:
        result = scatterx.scatter_elements(data, indices, updates, reduction="add")
        stream.synchronize()
    assert float(result[:1000].sum().get()) == float(1 << 20)


def test_numpy_input_is_never_sent_to_the_gpu() -> None:
    with pytest.raises(scatterx.BackendError):
        scatterx.scatter_elements(np.zeros(3), np.array([1]), np.array([2.0]), backend="cupy")


# ---- gather_elements: through the front-end, against the numpy backend ----


def _laid_out(array: Any, how: str) -> Any:
    """``array`` (cupy) in the layout that ``how`` names, as ``test_cupy_emulated.laid_out``."""
    import cupy

    if how == "F":
        return cupy.asfortranarray(array)
    flip = (slice(None, None, -1),) * array.ndim
    if how == "reversed":
        return cupy.ascontiguousarray(array[flip])[flip]
    if how == "every other":
        every = (slice(None, None, 2),) * array.ndim
        big = cupy.zeros(tuple(2 * n for n in array.shape), dtype=array.dtype)
        big[every] = array
        return big[every]
    return array


def _gather_on_gpu(data: Any, indices: Any, axis: int, layouts: tuple[str, str]) -> Any:
    import cupy

    moved = _laid_out(cupy.asarray(data), layouts[0]), _laid_out(cupy.asarray(indices), layouts[1])
    result = scatterx.gather_elements(*moved, axis=axis)
    assert isinstance(result, cupy.ndarray)
    assert result.flags.c_contiguous
    return result.get()


@pytest.mark.parametrize("geometry", GATHER_GEOMETRIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_matches_numpy_on_every_layout(dtype: str, geometry: Any) -> None:
    data, indices, _ = _case(dtype, "gather", *geometry)
    axis = geometry[2]
    expected = gather_expected(data, indices, axis)
    for index_type in ("int32", "int64"):
        for layouts in zip(LAYOUTS, (*LAYOUTS[1:], LAYOUTS[0]), strict=True):
            result = _gather_on_gpu(data, indices.astype(index_type), axis, layouts)
            assert_bitwise_equal(result, expected)


def test_gather_reads_bool_bytes_as_canonical_and_broadcast_data() -> None:
    import cupy

    raw = np.array([[0, 1, 85, 170], [255, 2, 0, 128]], dtype=np.uint8)
    indices = np.array([[1, -1, 0, 1], [0, 0, -2, 1]])
    expected = gather_expected(raw.view(np.bool_), indices, 0)
    for layouts in (("C", "C"), ("reversed", "F")):
        data = _laid_out(cupy.asarray(raw), layouts[0]).view(cupy.bool_)
        result = scatterx.gather_elements(data, _laid_out(cupy.asarray(indices), layouts[1]))
        assert_bitwise_equal(result.get(), expected)
    column = np.arange(5, dtype=np.float32).reshape(5, 1)
    wide = cupy.broadcast_to(cupy.asarray(column), (5, 8))  # strides (4, 0)
    indices = np.random.default_rng(3).integers(-5, 5, (7, 8))
    result = scatterx.gather_elements(wide, cupy.asarray(indices))
    assert_bitwise_equal(result.get(), gather_expected(np.broadcast_to(column, (5, 8)), indices, 0))


def test_gather_larger_than_its_grid() -> None:
    """More elements than the grid's threads: each thread loops over several."""
    rng = np.random.default_rng(11)
    data = rng.standard_normal(1 << 20).astype(np.float32)
    indices = rng.integers(-(1 << 20), 1 << 20, 1 << 23).astype(np.int32)
    result = _gather_on_gpu(data, indices, 0, ("C", "C"))
    assert_bitwise_equal(result, gather_expected(data, indices, 0))


def test_gather_on_the_conformance_cases() -> None:
    backend = CupyBackend()
    for case, data, indices in gather_conformance_arrays(backend):
        result = scatterx.gather_elements(data, indices, axis=case.axis)
        expected = gather_expected(case.data, case.indices, case.axis)
        assert_bitwise_equal(backend.to_numpy(result), expected)


@pytest.fixture
def small_grid_cache() -> Any:
    _run._device_threads.cache_clear()
    yield
    _run._device_threads.cache_clear()


@pytest.mark.usefixtures("small_grid_cache")
@pytest.mark.parametrize(("axis", "index_type", "small_grid"), GATHER_BAD_INDEX)
def test_gather_first_bad_index_in_c_order_raises_like_numpy(
    monkeypatch: pytest.MonkeyPatch, axis: int, index_type: str, small_grid: bool
) -> None:
    if small_grid:
        monkeypatch.setattr(_run, "THREADS_PER_SM", 1)
    assert_bad_gathers_raise(_gather_on_gpu, axis, index_type)


def test_gather_result_is_on_the_device_of_data_on_the_current_stream() -> None:
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    with cupy.cuda.Device(count - 1):
        data = cupy.arange(1 << 20, dtype=cupy.float32)
        indices = cupy.arange(1 << 20)[::-1] % 1000
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            result = scatterx.gather_elements(data, indices)
            stream.synchronize()
    assert result.device.id == count - 1
    assert float(result[:1000].sum().get()) == float(sum(range(1000)))


def test_numpy_input_is_never_gathered_on_the_gpu() -> None:
    with pytest.raises(scatterx.BackendError):
        scatterx.gather_elements(np.zeros(3), np.array([1]), backend="cupy")


def test_out_and_in_place_on_the_device() -> None:
    """``out=`` on CuPy arrays (and torch CUDA tensors, where torch has CUDA): the result in
    ``out``, ``out`` returned, and ``out`` untouched when an index is out of bounds."""
    import cupy

    rng = np.random.default_rng(5)
    data = rng.random((300, 40)).astype(np.float32)
    indices = rng.integers(-300, 300, (900, 40))
    updates = rng.random((900, 40)).astype(np.float32)
    expected = reference_scatter_elements(data, indices, updates, 0, "add")
    arrays = [cupy.asarray(a) for a in (data, indices, updates)]
    out = cupy.zeros_like(arrays[0])
    assert scatterx.scatter_elements(*arrays, reduction="add", out=out) is out
    assert_bitwise_equal(cupy.asnumpy(out), expected)
    assert scatterx.scatter_elements(*arrays, reduction="add", out=arrays[0]) is arrays[0]
    assert_bitwise_equal(cupy.asnumpy(arrays[0]), expected)
    bad = arrays[1].copy()
    bad[-1, -1] = 300
    before = cupy.asnumpy(out).tobytes()
    with pytest.raises(IndexError):
        scatterx.scatter_elements(arrays[0], bad, arrays[2], reduction="add", out=out)
    assert cupy.asnumpy(out).tobytes() == before
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        return
    tensors = [torch.from_numpy(a).cuda() for a in (data, indices, updates)]
    target = torch.zeros_like(tensors[0])
    assert scatterx.scatter_elements(*tensors, reduction="add", out=target) is target
    assert_bitwise_equal(target.cpu().numpy(), expected)


@pytest.mark.parametrize(("strategy", "dtype", "reduction", "geometry"), STRATEGY_CASES)
def test_out_modes_of_every_strategy_on_the_device(
    strategy: str, dtype: str, reduction: str, geometry: Any
) -> None:
    """The emulated ``out=`` checks on the device: in place, a separate out, Fortran order."""
    import cupy

    arrays = case_arrays(dtype, geometry, hot=3, rows=strategy == "rows")
    check_out_modes(arrays, reduction, strategy, cupy.asarray, cupy.asnumpy)
