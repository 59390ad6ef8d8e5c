"""The cupy backend's kernels and launch code emulated on the host (g++, no GPU or cupy).

The emulation (``_cupy_emulation.py``) runs the very text of the ``.cu`` files as CUDA
would, with ``_run.scatter_elements`` unchanged on a cupy stand-in: so these tests cover
every strategy's kernels and the Python side that launches them, against the oracle, bad
indices included; ``test_cupy_out_emulated.py`` runs ``out=`` on it. A GPU run
(tools/gpu_check.sh) stays the test of the hardware: memory ordering, real warps, NVRTC.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import scatterx
from _cupy_emulation import (
    DTYPES,
    EMULATOR_GROUP,
    GEOMETRIES,
    GXX,
    LAST_AXIS,
    WITH_ROWS,
    DeviceArray,
    Emulator,
    case_arrays,
    device_request,
    on_device,
    run_on_host,
)
from scatterx._check import normalise_gather
from scatterx.testing import Case, all_cases, assert_bitwise_equal, reference_with_free_nans
from scatterx_cupy import CupyBackend, _compile, _fast, _gather, _run

# One xdist group (--dist=loadgroup) for every test of the emulation: its session fixture
# builds the kernels with g++ (about 40 s on the 2-core machine) once per worker that
# meets one of them, so one group is one build.
pytestmark = [
    pytest.mark.skipif(GXX is None, reason="g++ is not on PATH"),
    pytest.mark.xdist_group(EMULATOR_GROUP),
]


def _ordered(dtype: str) -> list[str]:
    reductions = scatterx.DTYPE_REDUCTIONS[dtype]
    return sorted(r for r in reductions if not _compile.uses_atomics(dtype, r))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("geometry", GEOMETRIES + LAST_AXIS[1:])
def test_winners_match_the_oracle(on_host: Emulator, dtype: str, geometry: Any) -> None:
    for reduction in _ordered(dtype):
        if _compile.uses_winners(dtype, reduction):
            for hot in (0, 3):
                run_on_host(case_arrays(dtype, geometry, hot=hot), reduction, "winner")
    assert on_host.launched  # none at all would mean no reduction was tried


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("reduction", ["max", "min"])
def test_winner_keys_fold_like_np_maximum_over_many_ties(
    on_host: Emulator, dtype: str, reduction: str
) -> None:
    """About seven updates per target from eight values and four NaNs: every tie and NaN rule."""
    for seed in range(3):
        run_on_host(case_arrays(dtype, ((2000,), (14000,), 0), seed=seed), reduction, "winner")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("geometry", LAST_AXIS)
def test_warps_match_the_oracle(on_host: Emulator, dtype: str, geometry: Any) -> None:
    for reduction in _ordered(dtype):
        for hot in (0, 3):
            run_on_host(case_arrays(dtype, geometry, hot=hot), reduction, "warps")
    assert all(name.startswith("scx_warps<") for name in on_host.launched)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("geometry", WITH_ROWS)
def test_rows_match_the_oracle(on_host: Emulator, dtype: str, geometry: Any) -> None:
    for reduction in _ordered(dtype):
        on_host.launched.clear()
        run_on_host(case_arrays(dtype, geometry, rows=True), reduction, "rows")
        assert any(name.startswith("scx_row_runs<") for name in on_host.launched)
        on_host.launched.clear()
        run_on_host(case_arrays(dtype, geometry), reduction, "rows")  # mixed rows: the full sort
        assert any(name.startswith("scx_runs<") for name in on_host.launched)


@pytest.mark.parametrize("strategy", ["columns", "sort", "atomics"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_default_strategies_match_the_oracle(on_host: Emulator, strategy: str, dtype: str) -> None:
    """The strategies verified on GPUs: what vouches for the emulation itself."""
    for reduction in scatterx.DTYPE_REDUCTIONS[dtype]:
        if (strategy == "atomics") == _compile.uses_atomics(dtype, reduction):
            for geometry in GEOMETRIES[:3]:
                run_on_host(case_arrays(dtype, geometry, hot=3), reduction, strategy)


#: (strategy, dtype, reduction, whole rows, axis) of the bad-index checks, here and on a GPU.
BAD_INDEX = [
    ("columns", "int32", "add", False, 0),
    ("sort", "int32", "add", False, 0),
    ("atomics", "int32", "add", False, 0),
    ("sort", "float32", "none", False, 0),
    ("winner", "float32", "none", False, 0),
    ("winner", "float32", "max", False, 0),
    ("rows", "float32", "add", True, 0),
    ("rows", "float32", "add", False, 0),
    ("warps", "float32", "add", False, 1),
    ("warps", "float32", "none", False, 1),
]


def bad_index_call(
    dtype: str, reduction: str, rows: bool, axis: int
) -> tuple[tuple[Any, Any, Any], str]:
    """Arrays with three bad indices, and the IndexError of NumPy's backend (the first)."""
    indices = np.zeros((4, 64), dtype=np.int64)
    if not rows:
        indices[:, 1::3] = 2
    indices[3, 1] = 9
    indices[1, 60] = -70 if axis else -7  # first in C order
    indices[2, 0] = 66 if axis else 6
    arrays = (np.zeros((6, 64), dtype=dtype), indices, np.ones((4, 64), dtype=dtype))
    with pytest.raises(IndexError) as on_cpu:
        scatterx.scatter_elements(*arrays, axis=axis, reduction=reduction, backend="numpy")
    return arrays, str(on_cpu.value)


@pytest.mark.parametrize(("strategy", "dtype", "reduction", "rows", "axis"), BAD_INDEX)
def test_first_bad_index_in_c_order_raises_like_numpy(
    on_host: Emulator, strategy: str, dtype: str, reduction: str, rows: bool, axis: int
) -> None:
    arrays, message = bad_index_call(dtype, reduction, rows, axis)
    with pytest.raises(IndexError) as emulated:
        _run.scatter_elements(device_request(*arrays, axis, reduction), force=strategy)
    assert str(emulated.value) == message


@pytest.mark.parametrize(
    ("geometry", "dtype", "reduction", "expected"),
    [
        (((9, 40), (300, 40), 0), "float32", "none", "winner"),
        (((9, 40), (300, 40), 0), "float16", "max", "winner"),
        (((6, 50), (5, 40), 1), "float64", "add", "warps"),
        (((9, 40), (300, 40), 0), "complex64", "add", "rows"),
    ],
)
def test_the_opt_in_turns_the_fast_paths_on(
    on_host: Emulator,
    monkeypatch: pytest.MonkeyPatch,
    geometry: Any,
    dtype: str,
    reduction: str,
    expected: str,
) -> None:
    monkeypatch.setattr(_fast, "WARPS_MIN_COLS", 4)  # so few columns, for a quick emulation
    case = case_arrays(dtype, geometry, hot=5, rows=expected == "rows")
    kernels = {"winner": "scx_win_", "warps": "scx_warps<", "rows": "scx_row_runs<"}
    run_on_host(case, reduction, None)
    assert not any(name.startswith(kernels[expected]) for name in on_host.launched)
    monkeypatch.setenv(_fast.ENV_VAR, "1")
    run_on_host(case, reduction, None)
    assert any(name.startswith(kernels[expected]) for name in on_host.launched)


def test_conformance_cases_with_the_fast_paths_on(on_host: Emulator) -> None:
    """Every conformance case of an emulated dtype, strategies chosen with the fast paths on."""
    _fast.set_fast_paths(True)
    ran = 0
    backend = CupyBackend()
    for case in all_cases():
        if case.error is not None or case.dtype_key not in DTYPES:
            continue
        try:  # as the conformance runner does: what cupy cannot hold is skipped there
            arrays = [
                backend.from_numpy(np.asarray(a)) for a in (case.data, case.indices, case.updates)
            ]
        except TypeError:
            continue
        request = device_request(*arrays, case.axis, case.reduction)
        expected, free_nans = reference_with_free_nans(
            case.data, case.indices, case.updates, case.axis, case.reduction
        )
        result = _run.scatter_elements(request)
        assert_bitwise_equal(result.get(), expected, any_nan=free_nans)
        ran += 1
    assert ran > 300
    for kernel in ("scx_win_last<", "scx_win_best<", "scx_columns<", "scx_atomics<", "scx_runs<"):
        assert any(name.startswith(kernel) for name in on_host.launched), kernel


# ---- gather_elements: the kernel of each itemsize, on every layout of data and indices ----

#: Every itemsize (1, 2, 4, 8, 16 bytes), bool's canonical 0/1 and float NaN payloads.
GATHER_DTYPES = ("bool", "uint8", "float16", "float32", "int64", "complex64", "complex128")
#: (data shape, index shape, axis): merged dims, a skipped dim, length-1 dims, a longer axis.
GATHER_GEOMETRIES = [
    ((40,), (300,), 0),
    ((9, 7, 5), (12, 6, 5), 0),
    ((6, 33, 4), (5, 40, 3), 1),
    ((2, 3, 4, 5), (1, 3, 2, 5), 2),
    ((3, 1, 4, 6), (3, 1, 4, 2), 3),
]
LAYOUTS = ("C", "F", "reversed", "every other")


def laid_out(array: Any, how: str) -> Any:
    """A view with ``array``'s values, bytes included, and the strides that ``how`` names:
    C or F order, every stride negative, or every other element of a larger array."""
    if how == "F":
        return np.asfortranarray(array).view(DeviceArray)
    flip = (slice(None, None, -1),) * array.ndim
    if how == "reversed":
        return np.ascontiguousarray(array[flip]).view(DeviceArray)[flip]
    if how == "every other":
        raw = np.dtype((np.void, array.itemsize))  # bytes as they are: bool's too
        every = (slice(None, None, 2),) * array.ndim
        big = np.zeros(tuple(2 * n for n in array.shape), dtype=array.dtype)
        big.view(raw)[every] = array.view(raw)
        return big.view(DeviceArray)[every]
    return on_device(array)


def gather_expected(data: Any, indices: Any, axis: int) -> Any:
    """The numpy backend's gather of the same values: the bits every backend returns."""
    return scatterx.gather_elements(
        np.asarray(data), np.asarray(indices), axis=axis, backend="numpy"
    )


def _gather_on_host(data: Any, indices: Any, axis: int, layouts: tuple[str, str]) -> Any:
    """Gather NumPy ``data`` and ``indices`` laid out as ``layouts`` say, through ``_gather``."""
    request = normalise_gather(data, indices, axis)
    moved = laid_out(data, layouts[0]), laid_out(indices, layouts[1])
    result = _gather.gather_elements(request._replace(data=moved[0], indices=moved[1]))
    assert isinstance(result, DeviceArray)
    assert result.flags.c_contiguous
    assert result.dtype == data.dtype
    return result.get()


@pytest.mark.parametrize("dtype", GATHER_DTYPES)
@pytest.mark.parametrize("geometry", GATHER_GEOMETRIES)
def test_gather_matches_numpy_on_every_layout(on_host: Emulator, dtype: str, geometry: Any) -> None:
    data, indices, _, axis = case_arrays(dtype, geometry)  # indices of either sign
    assert (indices < 0).any()
    expected = gather_expected(data, indices, axis)
    for index_type, data_layout, index_layout in zip(
        ("int64", "int32", "int64", "int32"), LAYOUTS, (*LAYOUTS[1:], LAYOUTS[0]), strict=True
    ):
        typed = indices.astype(index_type)
        result = _gather_on_host(data, typed, axis, (data_layout, index_layout))
        assert_bitwise_equal(result, expected)
    assert all(name.startswith("scx_gather<") for name in on_host.launched)
    assert len(set(on_host.launched)) == 2  # one kernel per index type, bool's own


def test_gather_loops_when_the_grid_is_smaller_than_the_result(
    on_host: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_run, "THREADS_PER_SM", 1)  # one block of 256 threads in all
    data, indices, _, axis = case_arrays("float32", ((9, 7, 5), (30, 7, 5), 0))
    assert _run._blocks(min(indices.size, _gather.WAVES * _run._device_threads(0))) == (1,)
    result = _gather_on_host(data, indices, axis, ("reversed", "F"))
    assert_bitwise_equal(result, gather_expected(data, indices, axis))


def test_gather_reads_broadcast_data_and_misaligned_strides(on_host: Emulator) -> None:
    rng = np.random.default_rng(3)
    column = rng.standard_normal((5, 1)).astype(np.float32)
    broadcast = np.broadcast_to(column, (5, 8)).view(DeviceArray)  # strides (4, 0)
    indices = rng.integers(-5, 5, (7, 8))
    request = normalise_gather(np.ascontiguousarray(broadcast), indices, 0)
    result = _gather.gather_elements(request._replace(data=broadcast))
    assert_bitwise_equal(result.get(), gather_expected(broadcast, indices, 0))
    buffer = rng.integers(0, 256, 64, dtype=np.uint8)
    odd = np.ndarray((10,), dtype=np.float32, buffer=buffer, offset=1, strides=(6,))
    request = normalise_gather(odd.copy(), indices[0], 0)  # strides of 1.5 elements: a copy
    result = _gather.gather_elements(request._replace(data=odd.view(DeviceArray)))
    assert_bitwise_equal(result.get(), gather_expected(odd, indices[0], 0))


def test_gather_of_nothing_launches_nothing(on_host: Emulator) -> None:
    request = normalise_gather(np.ones((3, 4)), np.zeros((0, 4), dtype=np.int64), 0)
    result = _gather.gather_elements(request._replace(data=on_device(request.data)))
    assert result.shape == (0, 4)
    assert not on_host.launched


#: (axis, index dtype, small grid) of the gather's bad-index checks, here and on a GPU.
GATHER_BAD_INDEX = [(0, "int64", False), (1, "int32", False), (0, "int32", True)]


def bad_gather_call(axis: int, index_type: str) -> tuple[tuple[Any, Any], str]:
    """Data and indices with three bad indices, and the numpy backend's IndexError."""
    arrays, message = bad_index_call("float32", "none", False, axis)
    data, indices = arrays[0], arrays[1].astype(index_type)
    with pytest.raises(IndexError) as on_cpu:
        scatterx.gather_elements(data, indices, axis=axis, backend="numpy")
    assert str(on_cpu.value) == message  # the scatter's message: the same first bad index
    return (data, indices), message


def assert_bad_gathers_raise(gather: Callable[..., Any], axis: int, index_type: str) -> None:
    """``gather(data, indices, axis, layouts)`` of :func:`bad_gather_call`'s arrays, in C
    order and in other layouts, raises the numpy backend's IndexError."""
    (data, indices), message = bad_gather_call(axis, index_type)
    for layouts in (("C", "C"), ("every other", "reversed")):
        with pytest.raises(IndexError) as raised:
            gather(data, indices, axis, layouts)
        assert str(raised.value) == message


def gather_conformance_arrays(backend: CupyBackend) -> Iterator[tuple[Case, Any, Any]]:
    """Each conformance case that succeeds, of a dtype the backend holds, with its data and
    indices as the backend's arrays (a case whose arrays it cannot hold left out)."""
    for case in all_cases():
        if case.error is not None or case.dtype_key not in backend.capabilities:
            continue
        try:
            data, indices = (backend.from_numpy(np.asarray(a)) for a in (case.data, case.indices))
        except TypeError:
            continue
        yield case, data, indices


@pytest.mark.parametrize(("axis", "index_type", "small_grid"), GATHER_BAD_INDEX)
def test_gather_first_bad_index_in_c_order_raises_like_numpy(
    on_host: Emulator, monkeypatch: pytest.MonkeyPatch, axis: int, index_type: str, small_grid: bool
) -> None:
    if small_grid:
        monkeypatch.setattr(_run, "THREADS_PER_SM", 1)
    assert_bad_gathers_raise(_gather_on_host, axis, index_type)


def test_gather_on_the_conformance_cases(on_host: Emulator) -> None:
    """Every conformance case of a dtype cupy holds, as a gather of its data and indices."""
    ran = 0
    for case, data, indices in gather_conformance_arrays(CupyBackend()):
        expected = gather_expected(case.data, case.indices, case.axis)
        request = normalise_gather(case.data, case.indices, case.axis)
        result = _gather.gather_elements(request._replace(data=data, indices=indices))
        assert_bitwise_equal(result.get(), expected)
        ran += 1
    assert ran > 500
