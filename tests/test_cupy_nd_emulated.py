"""scatter_nd and gather_nd of the cupy backend in the host emulation of its kernels.

Every strategy, forced, against the loop oracles bit for bit; the bounds checked before any
kernel runs; ``out=`` and in place; the whole-row strategy reading the index rows'
positions, not an index array of the updates' shape. The helpers take the arrays' move to
the device and back, so that ``tests/test_cupy_nd.py`` runs the same checks on a GPU.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import scatterx
from _cupy_emulation import EMULATOR_GROUP, GXX, DeviceArray, Emulator, _values, on_device
from scatterx._check import GATHER_ND, SCATTER_ND, check
from scatterx.testing import assert_bitwise_equal, reference_gather_nd
from scatterx.testing._oracle_nd import reference_scatter_nd_with_free_nans
from scatterx_cupy import CupyBackend, _compile, _fast, _nd
from scatterx_cupy._layout import layout

pytestmark = [
    pytest.mark.skipif(GXX is None, reason="g++ is not on PATH"),
    pytest.mark.xdist_group(EMULATOR_GROUP),
]

Move = Callable[[np.ndarray[Any, Any]], Any]

#: (data shape, index shape): whole rows of 1, 35 and 80 elements, k = 2 and k = ndim.
SCATTER_GEOMETRIES = [
    ((40,), (300, 1)),
    ((9, 7, 5), (60, 1)),
    ((9, 7, 5), (12, 4, 2)),
    ((6, 4, 20), (50, 1)),
    ((5, 3, 4), (30, 3)),
]
#: (data shape, index shape, batch_dims).
GATHER_GEOMETRIES = [
    ((40,), (30, 1), 0),
    ((9, 7, 5), (6, 4, 2), 0),
    ((3, 7, 5), (3, 8, 1), 1),
    ((2, 3, 4, 5), (2, 3, 6, 1), 2),
    ((5, 3, 4), (30, 3), 0),
]
#: The dtypes of the emulator (``_cupy_emulation.DTYPES``): every family of kernels.
DTYPES = ("bool", "int32", "uint8", "float16", "float32", "float64", "complex64")


def scatter_case(dtype: str, geometry: Any, hot: int = 3) -> tuple[Any, Any, Any]:
    """Data, indices (either sign, many repeated rows) and updates, on the host."""
    shape, index_shape = geometry
    rng = np.random.default_rng(zlib.crc32(repr((dtype, geometry)).encode()))
    k = index_shape[-1]
    sizes = np.array(shape[:k])
    indices = rng.integers(0, hot, index_shape) % sizes - sizes * rng.integers(0, 2, index_shape)
    updates_shape = tuple(index_shape[:-1]) + tuple(shape[k:])
    return _values(rng, dtype, shape), indices, _values(rng, dtype, updates_shape)


def gather_case(dtype: str, geometry: Any) -> tuple[Any, Any, int]:
    """Data, indices of either sign, and batch_dims, on the host."""
    shape, index_shape, batch = geometry
    rng = np.random.default_rng(zlib.crc32(repr((dtype, geometry)).encode()))
    sizes = np.array(shape[batch : batch + index_shape[-1]])
    indices = rng.integers(0, 1 << 20, index_shape) % sizes - sizes * rng.integers(
        0, 2, index_shape
    )
    return _values(rng, dtype, shape), indices, batch


def strategies(dtype: str, reduction: str, shape: tuple[int, ...], k: int) -> list[str]:
    """The strategies that can run a ScatterND of ``dtype`` and ``reduction``."""
    if _compile.uses_atomics(dtype, reduction):
        return ["atomics", "columns", "sort"]
    m = int(np.prod(shape[:k]))
    lay = layout((m, int(np.prod(shape[k:]))), (2, int(np.prod(shape[k:]))), 0)
    fast = [f for f in _fast.FAST_STRATEGIES if _fast.refusal(f, lay, dtype, reduction) is None]
    return ["columns", "sort", *fast]


def request_on(
    operation: Any, arrays: tuple[Any, ...], move: Move, arg: Any, out: Any = None
) -> Any:
    """The checked request of the host ``arrays``, its arrays (and ``out``) moved; ``arg``
    a scatter's reduction or a gather's batch_dims."""
    gather = operation is GATHER_ND
    batch, reduction = (arg, None) if gather else (None, arg)
    moved = tuple(move(a) for a in arrays)
    if move is not on_device:
        return check(operation, moved, batch, reduction, out)
    # the emulation: checked on NumPy (the front-end knows no DeviceArray), then moved
    request = check(operation, arrays, batch, reduction, None)
    return request._replace(**dict(zip(request.roles, moved, strict=True)), out=out)


def check_scatter_strategies(dtype: str, geometry: Any, move: Move, get: Move) -> None:
    """Every strategy that can run each reduction, forced: the oracle's bits."""
    data, indices, updates = scatter_case(dtype, geometry)
    for reduction in scatterx.DTYPE_REDUCTIONS[dtype]:
        expected, free = reference_scatter_nd_with_free_nans(data, indices, updates, reduction)
        for chosen in strategies(dtype, reduction, data.shape, indices.shape[-1]):
            request = request_on(SCATTER_ND, (data, indices, updates), move, reduction)
            got = get(_nd.scatter_nd(request, force=chosen))
            assert_bitwise_equal(got, expected, any_nan=free)


def check_gather(dtype: str, geometry: Any, move: Move, get: Move) -> None:
    """A gather, into a new array and into ``out``: the oracle's bits."""
    data, indices, batch = gather_case(dtype, geometry)
    expected = reference_gather_nd(data, indices, batch)
    request = request_on(GATHER_ND, (data, indices), move, batch)
    assert_bitwise_equal(get(_nd.gather_nd(request)), expected)
    out = move(np.zeros_like(expected))
    into = request_on(GATHER_ND, (data, indices), move, batch, out)
    assert _nd.gather_nd(into) is out
    assert_bitwise_equal(get(out), expected)


def check_out_and_in_place(move: Move, get: Move) -> None:
    """``out`` C-ordered: written and returned; ``out`` is data: updated in place."""
    data, indices, updates = scatter_case("float32", ((6, 4, 20), (50, 1)))
    expected, free = reference_scatter_nd_with_free_nans(data, indices, updates, "add")
    out = move(np.zeros_like(data))
    request = request_on(SCATTER_ND, (data, indices, updates), move, "add", out)
    assert _nd.scatter_nd(request) is out
    assert_bitwise_equal(get(out), expected, any_nan=free)
    request = request_on(SCATTER_ND, (data, indices, updates), move, "add")
    in_place = request._replace(out=request.data)
    assert _nd.scatter_nd(in_place) is request.data
    assert_bitwise_equal(get(request.data), expected, any_nan=free)


def check_bad_index_writes_nothing(move: Move, get: Move) -> None:
    """A bad index raises the numpy backend's IndexError; ``out`` and data stay untouched."""
    data, indices, updates = scatter_case("float64", ((9, 7, 5), (12, 4, 2)))
    indices[3, 1, 0], indices[7, 0, 1] = 7, -9  # the first in C order: (3, 1, 0)
    with pytest.raises(IndexError) as numpy_error:
        scatterx.scatter_nd(data, indices, updates, backend="numpy")
    out = move(np.full_like(data, 7.0))
    request = request_on(SCATTER_ND, (data, indices, updates), move, "none", out)
    for call in (request, request._replace(out=request.data)):
        with pytest.raises(IndexError) as error:
            _nd.scatter_nd(call)
        assert str(error.value) == str(numpy_error.value)
    assert_bitwise_equal(get(out), np.full_like(data, 7.0))
    assert_bitwise_equal(get(request.data), data)
    with pytest.raises(IndexError) as error:
        _nd.gather_nd(request_on(GATHER_ND, (data, indices), move, 0, move(np.empty((12, 4, 5)))))
    assert str(error.value) == str(numpy_error.value)


@pytest.mark.parametrize("geometry", SCATTER_GEOMETRIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_strategy_matches_the_oracle(on_host: Emulator, dtype: str, geometry: Any) -> None:
    check_scatter_strategies(dtype, geometry, on_device, np.asarray)


@pytest.mark.parametrize("geometry", GATHER_GEOMETRIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_matches_the_oracle(on_host: Emulator, dtype: str, geometry: Any) -> None:
    check_gather(dtype, geometry, on_device, np.asarray)


def test_out_and_in_place(on_host: Emulator) -> None:
    check_out_and_in_place(on_device, np.asarray)


def test_bad_index_raises_before_any_kernel(on_host: Emulator) -> None:
    check_bad_index_writes_nothing(on_device, np.asarray)
    assert on_host.launched == []


def test_whole_rows_read_one_position_per_row(on_host: Emulator) -> None:
    """Strategy ``rows`` sorts the rows' positions: no check pass over an index array."""
    data, indices, updates = scatter_case("float32", ((6, 4, 20), (50, 1)))
    request = request_on(SCATTER_ND, (data, indices, updates), on_device, "add")
    _nd.scatter_nd(request, force="rows")
    assert [name.split("<")[0] for name in on_host.launched] == ["scx_row_runs"]


def test_automatic_choice_takes_whole_rows_with_the_fast_paths(on_host: Emulator) -> None:
    data, indices, updates = scatter_case("float32", ((600, 20), (5000, 1)), hot=600)
    expected, free = reference_scatter_nd_with_free_nans(data, indices, updates, "add")
    request = request_on(SCATTER_ND, (data, indices, updates), on_device, "add")
    assert_bitwise_equal(np.asarray(_nd.scatter_nd(request)), expected, any_nan=free)
    assert on_host.launched[-1].startswith("scx_runs<")  # sort, without the opt-in
    _fast.set_fast_paths(True)
    assert_bitwise_equal(np.asarray(_nd.scatter_nd(request)), expected, any_nan=free)
    assert on_host.launched[-1].startswith("scx_row_runs<")


def test_empty_calls(on_host: Emulator) -> None:
    data = np.arange(12.0).reshape(4, 3)
    none = np.zeros((0, 1), np.int64)
    request = request_on(SCATTER_ND, (data, none, np.zeros((0, 3))), on_device, "add")
    assert_bitwise_equal(np.asarray(_nd.scatter_nd(request)), data)
    gathered = _nd.gather_nd(request_on(GATHER_ND, (data, none), on_device, 0))
    assert isinstance(gathered, DeviceArray)
    assert gathered.shape == (0, 3)


def test_can_run_refuses_what_the_elements_path_refuses() -> None:
    backend = CupyBackend()
    data, rows = np.zeros(3), np.zeros((1, 1), np.int64)
    nd = check(SCATTER_ND, (data, rows, np.zeros(1)), None, "add")
    gather_nd = check(GATHER_ND, (data, rows), 0, None)
    elements = scatterx._check.normalise(data, np.zeros(1, np.int64), np.zeros(1), 0, "add")
    for dtype in ("bfloat16", "StringDType", "object", "float64"):
        want = backend.can_run(elements._replace(dtype_key=dtype))
        assert (want is None) == (dtype == "float64")
        assert backend.can_run(nd._replace(dtype_key=dtype)) == want
        assert backend.can_run(gather_nd._replace(dtype_key=dtype)) == want
