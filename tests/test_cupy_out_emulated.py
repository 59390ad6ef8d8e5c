"""``out=`` in the cupy backend, on the host emulation of its kernels (``_cupy_emulation``).

The backend writes into a C-ordered ``out`` itself: into ``data``'s own memory for an
update in place, with no copy; after a copy of ``data`` into a separate ``out``. The indices
are checked first (``scx_bounds``, one host sync), so that a call that raises leaves ``out``
untouched; then no second sync. A ``out`` in another layout gets a new array, which the
front-end copies in. ``tests/test_cupy_gpu.py`` runs :func:`check_out_modes` on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from _cupy_emulation import EMULATOR_GROUP, GXX, DeviceArray, Emulator, case_arrays, on_device
from scatterx._check import normalise, normalise_gather
from scatterx.testing import assert_bitwise_equal, reference_with_free_nans
from scatterx_cupy import _gather, _run
from test_cupy_emulated import bad_gather_call, bad_index_call, gather_expected

# One xdist group (--dist=loadgroup) for every test of the emulation: its session fixture
# builds the kernels with g++ (about 40 s on the 2-core machine) once per worker that
# meets one of them, so one group is one build.
pytestmark = [
    pytest.mark.skipif(GXX is None, reason="g++ is not on PATH"),
    pytest.mark.xdist_group(EMULATOR_GROUP),
]

#: (strategy, dtype, reduction, geometry): every strategy once, each on a case it serves.
STRATEGY_CASES = [
    ("columns", "float32", "add", ((9, 7, 5), (12, 6, 5), 0)),
    ("sort", "float64", "mul", ((40,), (300,), 0)),
    ("atomics", "int32", "add", ((6, 33, 4), (5, 40, 3), 1)),
    ("winner", "float16", "max", ((9, 7, 5), (12, 6, 5), 0)),
    ("warps", "complex64", "add", ((6, 33), (5, 70), 1)),
    ("rows", "float32", "min", ((7, 3, 4), (50, 3, 4), 0)),
    ("columns", "bool", "none", ((9, 7, 5), (12, 6, 5), 0)),
]
#: How ``out`` is given: data itself, a C-ordered array of its own, a Fortran-ordered one.
MODES = ("in-place", "separate", "fortran")


def _out_for(mode: str, data: Any, to_device: Callable[[Any], Any]) -> Any:
    if mode == "in-place":
        return data
    if mode == "separate":
        return to_device(np.full(data.shape, 7, dtype=data.dtype))
    return to_device(np.full(data.shape[::-1], 7, dtype=data.dtype)).T  # Fortran order


def moved_request(
    arrays: tuple[Any, Any, Any, int], reduction: str, to_device: Callable[[Any], Any]
) -> Any:
    """The request of NumPy ``arrays``, its data, indices and updates on the device."""
    data, indices, updates, axis = arrays
    request = normalise(data, indices, updates, axis, reduction)
    roles = ("data", "indices", "updates")
    return request._replace(**{role: to_device(getattr(request, role)) for role in roles})


def check_out_modes(
    arrays: tuple[Any, Any, Any, int],
    reduction: str,
    strategy: str,
    to_device: Callable[[Any], Any],
    to_host: Callable[[Any], Any],
) -> None:
    """Each mode of ``out`` gives the oracle's bits; a C-ordered ``out`` is the array returned."""
    data, indices, updates, axis = arrays
    expected, free_nans = reference_with_free_nans(data, indices, updates, axis, reduction)
    for mode in MODES:
        request = moved_request(arrays, reduction, to_device)
        out = _out_for(mode, request.data, to_device)
        result = _run.scatter_elements(request._replace(out=out), force=strategy)
        assert (result is out) == bool(out.flags.c_contiguous), mode
        assert_bitwise_equal(to_host(result), expected, any_nan=free_nans)
        if mode == "separate":  # data itself is left as it was (bools as they were)
            assert to_host(request.data).tobytes() == np.asarray(data).tobytes()


def _copied_to_device(array: Any) -> Any:
    """A device array of its own (``on_device`` may share a C-ordered array's memory)."""
    return on_device(np.array(array))


@pytest.mark.parametrize(("strategy", "dtype", "reduction", "geometry"), STRATEGY_CASES)
def test_out_gets_the_oracles_bits_in_every_mode(
    on_host: Emulator, strategy: str, dtype: str, reduction: str, geometry: Any
) -> None:
    arrays = case_arrays(dtype, geometry, hot=3, rows=strategy == "rows")
    check_out_modes(arrays, reduction, strategy, _copied_to_device, np.asarray)
    assert any(name.startswith("scx_bounds<") for name in on_host.launched)


def test_in_place_copies_nothing_and_syncs_once(
    on_host: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In place: the kernels update data's memory (no copy of it), after the one sync of the
    bounds check; the strategy's kernels add no second one."""
    arrays = case_arrays("float32", ((40,), (300,), 0), hot=5)
    request = moved_request(arrays, "add", _copied_to_device)
    data = request.data
    syncs: list[int] = []
    checked = _run._raise_bad_index
    monkeypatch.setattr(_run, "_raise_bad_index", lambda *a: syncs.append(1) or checked(*a))
    before = data.copy()
    monkeypatch.setattr(DeviceArray, "copy", None)  # any copy of data now fails
    assert _run.scatter_elements(request._replace(out=data), force="sort") is data
    assert not np.array_equal(data, before)  # the sum landed in data's own memory
    assert len(syncs) == 1
    assert on_host.launched[0].startswith("scx_bounds<")


def test_in_place_bools_become_canonical(on_host: Emulator) -> None:
    data = np.array([0, 2, 255, 1, 0, 9], dtype=np.uint8).view(np.bool_)
    arrays = (data, np.array([4, 0]), np.array([True, False]), 0)
    request = moved_request(arrays, "none", on_device)
    assert _run.scatter_elements(request._replace(out=request.data)) is request.data
    assert np.asarray(request.data).view(np.uint8).tolist() == [0, 1, 1, 1, 1, 1]


@pytest.mark.parametrize("mode", ["in-place", "separate"])
@pytest.mark.parametrize("strategy", ["columns", "sort", "atomics", "winner", "warps", "rows"])
def test_a_bad_index_leaves_out_untouched(on_host: Emulator, strategy: str, mode: str) -> None:
    """The message of NumPy's backend, and not one kernel of the strategy launched."""
    dtype, reduction = ("int32", "add") if strategy == "atomics" else ("float32", "add")
    reduction = "none" if strategy == "winner" else reduction
    axis = 1 if strategy == "warps" else 0
    arrays, message = bad_index_call(dtype, reduction, False, axis)
    request = moved_request((*arrays, axis), reduction, on_device)
    out = _out_for(mode, request.data, on_device)
    before = np.asarray(out).tobytes()
    with pytest.raises(IndexError) as raised:
        _run.scatter_elements(request._replace(out=out), force=strategy)
    assert str(raised.value) == message
    assert np.asarray(out).tobytes() == before
    assert [name.partition("<")[0] for name in on_host.launched] == ["scx_bounds"]


@pytest.mark.parametrize("mode", ["separate", "fortran"])
def test_gather_into_out(on_host: Emulator, mode: str) -> None:
    rng = np.random.default_rng(3)
    data = rng.random((6, 7)).astype(np.float32)
    indices = rng.integers(-6, 6, (9, 7))
    out = _out_for(mode, np.empty((9, 7), dtype=np.float32), on_device)
    request = normalise_gather(data, indices, 0)
    moved = {"data": on_device(data), "indices": on_device(indices), "out": out}
    result = _gather.gather_elements(request._replace(**moved))
    assert (result is out) == (mode == "separate")
    assert_bitwise_equal(np.asarray(result), gather_expected(data, indices, 0))


def test_gather_bad_index_leaves_out_untouched(on_host: Emulator) -> None:
    (data, indices), message = bad_gather_call(0, "int64")
    out = on_device(np.full(indices.shape, 5, dtype=data.dtype))
    request = normalise_gather(data, indices, 0)
    moved = {"data": on_device(data), "indices": on_device(indices), "out": out}
    with pytest.raises(IndexError) as raised:
        _gather.gather_elements(request._replace(**moved))
    assert str(raised.value) == message
    assert (np.asarray(out) == 5).all()
    assert [name.partition("<")[0] for name in on_host.launched] == ["scx_bounds"]


def test_the_bounds_check_loops_when_the_grid_is_smaller_than_the_indices(
    on_host: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One block of 256 threads for 3000 indices: the bad ones late in C order are found."""
    monkeypatch.setattr(_run, "THREADS_PER_SM", 1)
    indices = np.zeros((3000,), dtype=np.int64)
    indices[[2900, 2999]] = [40, -41]
    arrays = (np.zeros(40, dtype=np.float32), indices, np.ones(3000, dtype=np.float32), 0)
    request = moved_request(arrays, "add", _copied_to_device)
    with pytest.raises(IndexError, match=r"index 40 at position \(2900,\) of indices"):
        _run.scatter_elements(request._replace(out=request.data), force="sort")
    assert on_host.launched == ["scx_bounds<long long>"]
    assert not np.asarray(request.data).any()
