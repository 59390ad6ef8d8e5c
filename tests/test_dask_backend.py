"""The dask backend: every conformance case under several chunkings, laziness, when each
error is raised (contract.md sections 4 and 8), the chunk plan, and the cores its tasks share.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

import _dask_checks as checks
import scatterx
from _subprocess import run_python
from scatterx.testing import Case, all_cases, error_cases, first_difference, run_case
from scatterx_dask import DaskBackend, _cores, _plan, few_chunks, test_chunks

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
callbacks = pytest.importorskip("dask.callbacks")

Array = np.ndarray[Any, Any]
Chunker = Callable[[Array], Any]


# --- 1. The conformance cases under three chunkings ---------------------------------------


def _along_axis(case: Case) -> Chunker:
    """Chunks along the case's axis only (2, or a quarter of the axis), one elsewhere; one
    chunk everywhere where the axis is not a valid one (an error case)."""

    def chunks(array: Array) -> tuple[int, ...]:
        ndim, axis = array.ndim, case.axis
        axis = axis % ndim if type(axis) is int and -ndim <= axis < ndim else None
        return tuple(max(2, -(-n // 4)) if d == axis else -1 for d, n in enumerate(array.shape))

    return chunks


def _irregular(n: int) -> tuple[int, ...]:
    """Chunks of 1, 2, 3, ... (the last one cut) over a dimension of ``n``."""
    pieces: list[int] = []
    while sum(pieces) < n:
        pieces.append(min(len(pieces) + 1, n - sum(pieces)))
    return tuple(pieces) or (0,)


# data, indices, updates: boundaries that line up nowhere, each at most a few blocks a side
_ROLES: list[Callable[[int], Any]] = [
    lambda n: max(2, -(-n // 4)),
    lambda n: max(3, -(-n // 3)),
    _irregular,
]


def _mixed(case: Case) -> Chunker:
    """Data, indices and updates (run_case converts them in that order) chunked apart."""
    calls = itertools.count()

    def chunks(array: Array) -> tuple[Any, ...]:
        role = _ROLES[next(calls) % 3]
        return tuple(role(n) for n in array.shape)

    return chunks


CHUNKINGS: dict[str, Callable[[Case], Chunker]] = {
    "one-chunk": lambda case: lambda array: (-1,) * array.ndim,
    "along-axis": _along_axis,
    "mixed": _mixed,
}
CASES = all_cases()


def _param(chunking: str, case: Case) -> Any:
    group = pytest.mark.xdist_group(f"{case.dtype_key}-{case.reduction}")
    return pytest.param(chunking, case, id=f"{chunking}-{case.name}", marks=group)


@pytest.mark.parametrize(
    ("chunking", "case"), [_param(chunking, case) for chunking in CHUNKINGS for case in CASES]
)
def test_conformance_under_chunking(chunking: str, case: Case) -> None:
    with test_chunks(CHUNKINGS[chunking](case)):
        outcome = run_case("dask", case)
    if outcome.status == "skipped":
        pytest.skip(outcome.detail)
    assert outcome.status == "passed", outcome.detail


def test_the_chunkers_reach_the_test_data() -> None:
    case = Case("c", "t", np.zeros((6, 9)), np.zeros((8, 9), np.int64), np.zeros((8, 9)), axis=1)
    to_dask = DaskBackend().from_numpy
    with test_chunks(_mixed(case)):
        chunks = [to_dask(a).chunks for a in (case.data, case.indices, case.updates)]
    assert chunks == [((2,) * 3, (3,) * 3), ((3, 3, 2), (3,) * 3), ((1, 2, 3, 2), (1, 2, 3, 3))]
    with test_chunks(_along_axis(case)):
        assert to_dask(case.indices).chunks == ((8,), (3, 3, 3))


# --- 2. Laziness ---------------------------------------------------------------------------


no_compute = pytest.fixture(checks.no_compute)


def _each(arrays: tuple[Array, ...], chunks: tuple[Any, ...]) -> tuple[Any, ...]:
    """Each array as a Dask array with its own chunks."""
    return tuple(da.from_array(a, chunks=c) for a, c in zip(arrays, chunks, strict=True))


def _lazy(*arrays: Array, chunks: Any = 2) -> tuple[Any, ...]:
    return _each(arrays, (chunks,) * len(arrays))


def _both(arrays: tuple[Array, ...], chunks: tuple[Any, ...], **kwargs: Any) -> tuple[Any, Array]:
    """The lazy result for ``arrays`` in ``chunks`` (one each), and the numpy backend's."""
    result = scatterx.scatter_elements(*_each(arrays, chunks), **kwargs)
    return result, scatterx.scatter_elements(*arrays, backend="numpy", **kwargs)


def _example(seed: int = 0) -> tuple[Array, Array, Array]:
    rng = np.random.default_rng(seed)
    indices = rng.integers(-6, 6, (8, 5))
    return rng.standard_normal((6, 5)), indices, rng.standard_normal(indices.shape)


def test_nothing_is_computed_at_call_time(no_compute: list[Any]) -> None:
    arrays = _lazy(*_example())
    result = scatterx.scatter_elements(*arrays, reduction="add")
    decision = scatterx.explain(*arrays, reduction="add")
    checks.assert_lazy(result, decision, no_compute, "dask runs")


def test_the_result_computes_after_the_call() -> None:
    started: list[Any] = []
    with callbacks.Callback(start_state=lambda dsk, state: started.append(dsk)):
        result, expected = _both(_example(), (2, 2, 2), reduction="add")
        assert not started
        got = result.compute(scheduler="sync")
    assert started  # the callback sees a computation
    assert got.tobytes() == expected.tobytes()


# --- 3. When each error is raised ------------------------------------------------------------


META_ERRORS = [  # every error of error_cases() but the bounds': metadata tells them
    pytest.param(case, id=case.name) for case in error_cases() if case.error is not IndexError
]


@pytest.mark.parametrize("case", META_ERRORS)
def test_metadata_errors_raise_at_call_time(case: Case, no_compute: list[Any]) -> None:
    arrays = [np.asarray(a) for a in (case.data, case.indices, case.updates)]
    lazy = [da.from_array(a, chunks=few_chunks(a)) for a in arrays]
    assert case.error is not None
    with pytest.raises(case.error, match=case.match):
        scatterx.scatter_elements(*lazy, **case.kwargs())
    assert not no_compute


@pytest.mark.parametrize("numpy_role", [0, 1, 2], ids=["data", "indices", "updates"])
def test_mixed_libraries_raise_at_call_time(numpy_role: int, no_compute: list[Any]) -> None:
    arrays = list(_lazy(*_example()))
    arrays[numpy_role] = _example()[numpy_role]
    with pytest.raises(TypeError, match="one array library; got data: "):
        scatterx.scatter_elements(*arrays)
    assert not no_compute


@pytest.mark.parametrize("role", [0, 1, 2], ids=["data", "indices", "updates"])
def test_unknown_chunk_sizes_raise_at_call_time(role: int, no_compute: list[Any]) -> None:
    arrays = list(_lazy(*_example()))
    arrays[role] = checks.with_unknown_sizes(arrays[role])
    name = ("data", "indices", "updates")[role]
    with pytest.raises(ValueError, match=rf"{name}\.compute_chunk_sizes\(\)"):
        scatterx.scatter_elements(*arrays)
    assert not no_compute


# By axis, indices (for data (6, 8)) with bad values in several blocks: the first in C order
# comes after another one along the axis (axis 1), or in a block after another one's (axis 0,
# with indices in blocks of (2, 4)).
BAD_INDICES: dict[int, tuple[tuple[int, int], dict[tuple[int, int], int]]] = {
    0: ((9, 8), {(2, 6): -7, (3, 0): 6, (7, 1): 10, (8, 7): 6}),
    1: ((5, 12), {(0, 10): 20, (1, 5): -9, (3, 2): 8, (4, 11): 99}),
}


# data, indices, updates chunks ("along"/"off": data in 2s along/off the axis only); one
# chunk each lets the in-memory call raise by itself, with no guard
BAD_CHUNKINGS: dict[str, tuple[Any, Any, Any]] = {
    "one-chunk": (-1, -1, -1),
    "blocks": ((2, 3), (2, 4), (3, 5)),
    "data-along-axis": ("along", (1, 5), -1),
    "data-off-axis": ("off", -1, -1),
    "indices-small": (-1, (1, 1), (2, 3)),
}


@checks.over_bounds_grid(BAD_CHUNKINGS)
def test_out_of_bounds_raises_the_first_in_c_order_at_compute(
    axis: int, chunking: str, scheduler: str
) -> None:
    data, indices = checks.bad_indices(*BAD_INDICES[axis])
    updates = np.ones(indices.shape)
    data_chunks, index_chunks, update_chunks = BAD_CHUNKINGS[chunking]
    chunks = (checks.side_chunks(data_chunks, axis), index_chunks, update_chunks)
    lazy = _each((data, indices, updates), chunks)
    with dask.config.set(scheduler=checks.refuse):
        result = scatterx.scatter_elements(*lazy, axis=axis, reduction="add")
    position, message = checks.first_bad(indices, axis, data.shape[axis])
    column = tuple(slice(None) if d == axis else slice(p, p + 1) for d, p in enumerate(position))
    block = tuple(
        0 if d == axis else int(np.searchsorted(np.cumsum(c), p, side="right"))
        for d, (c, p) in enumerate(zip(result.chunks, position, strict=True))
    )
    checks.assert_each_raises((result, result[column], result.blocks[block]), message, scheduler)


# --- 4. The inputs, the result's type, empty indices, byte order ----------------------------


@pytest.mark.parametrize(
    "chunks", [(2, 2, 2), ((3, 5), 4, 3), (((1, 5), (2, 3)), (5, 1), ((7, 1), 5)), (-1, -1, -1)]
)
def test_result_is_a_dask_array_like_data_and_inputs_are_kept(chunks: Any) -> None:
    arrays = _example(1)
    sources = [a.copy() for a in arrays]
    result, expected = _both(arrays, chunks, reduction="max")
    assert isinstance(result, da.Array)
    data = da.from_array(arrays[0], chunks=chunks[0])
    assert (result.chunks, result.dtype, result.shape) == (data.chunks, data.dtype, data.shape)
    assert first_difference(result.compute(), expected) is None
    for source, kept in zip(arrays, sources, strict=True):
        assert source.tobytes() == kept.tobytes()


@pytest.mark.parametrize("axis", [0, 1])
def test_empty_indices_give_data(axis: int) -> None:
    data = np.arange(12, dtype=np.int16).reshape(3, 4)
    empty = np.zeros((0, 4) if axis else (3, 0), np.int64)
    lazy = _lazy(data, empty, empty.astype(np.int16))
    result = scatterx.scatter_elements(*lazy, axis=axis, reduction="mul")
    assert result.chunks == lazy[0].chunks
    assert first_difference(result.compute(), data) is None


@pytest.mark.parametrize("index_shape", [(8, 5), (0, 5)], ids=["updates", "empty"])
@pytest.mark.parametrize("chunks", [(3, 5), (6, 2)], ids=["along-axis", "off-axis"])
def test_byte_swapped_data_keeps_its_dtype(index_shape: tuple[int, ...], chunks: Any) -> None:
    swapped = np.dtype(">f4")
    data, indices, updates = _example(2)
    n = index_shape[0]
    arrays = (data.astype(swapped), indices[:n], updates[:n].astype(swapped))
    result, expected = _both(arrays, (chunks,) * 3, reduction="add")
    assert result.dtype == swapped
    got = result.compute()
    assert got.dtype == swapped
    assert first_difference(got, expected) is None


# --- 5. The plan of chunks ---------------------------------------------------------------------

PLANS = [  # data chunks, indices chunks, updates chunks, axis
    (((2, 2, 2), (4, 4)), ((3, 3, 3), (4, 4)), ((9,), (8,)), 0),
    (((6,), (3, 3, 2)), ((5,), (1,) * 7), ((2, 3), (7,)), 1),
    (((1,) * 6, (8,)), ((20,), (3, 3)), ((20,), (6,)), 0),
    (((4, 4), (5, 5)), ((1, 2), (10, 10, 10)), ((3,), (30,)), 1),
    (((2, 3), (1, 4), (6,)), ((4,), (2, 2), (5, 5, 5)), ((4,), (4,), (15,)), 2),
    (((6,), (6,)), ((100, 100), (6,)), ((200,), (6,)), 0),
    (((2, 2, 2), (6,)), ((30,), (1,) * 6), ((30,), (1,) * 6), 0),  # split along the axis
]


def _largest(chunks: tuple[tuple[int, ...], ...]) -> int:
    return math.prod(max(sizes) for sizes in chunks)


def _edges(sizes: tuple[int, ...]) -> list[int]:
    return list(itertools.accumulate(sizes))


@pytest.mark.parametrize(("data", "indices", "updates", "axis"), PLANS)
def test_plan_lines_index_blocks_up_with_data(
    data: Any, indices: Any, updates: Any, axis: int
) -> None:
    planned = _plan.plan(data, indices, updates, axis)
    shape = tuple(sum(sizes) for sizes in indices)
    assert tuple(sum(sizes) for sizes in planned.index_chunks) == shape
    for d, sizes in enumerate(planned.index_chunks):
        assert all(sizes)  # no empty block
        if d != axis:
            cut = [e for e in _edges(data[d]) if e < shape[d]] + [shape[d]]
            assert _edges(sizes) == cut
            assert planned.columns[d] == len(sizes)
    assert planned.columns[axis] == len(data[axis])
    budget = max(_largest(data), _largest(indices), _largest(updates))
    assert _largest(planned.index_chunks) <= budget


# --- 6. Cores shared between tasks, and the process-wide backend ------------------------------


def test_core_share_never_lends_more_cores_than_it_has() -> None:
    share = _cores.CoreShare(cores=lambda: 2)
    lock, held, taken, start = threading.Lock(), [0], [], threading.Barrier(8)

    def work(_: int) -> None:
        start.wait()
        for _ in range(25):
            with share.take() as cores:
                with lock:
                    held[0] += cores
                    taken.append((cores, held[0]))
                time.sleep(0.0005)
                with lock:
                    held[0] -= cores

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))
    assert len(taken) == 200
    assert min(cores for cores, _ in taken) >= 1
    assert max(total for _, total in taken) <= 2
    with share.take() as alone:
        assert alone == 2  # all back


def test_process_wide_dask_choice_still_runs_the_tasks() -> None:
    scatterx.set_backend("dask")
    try:
        result, expected = _both(_example(3), (3, 3, 3), reduction="min")
        got = result.compute(scheduler="threads")
    finally:
        scatterx.set_backend(None)
    assert first_difference(got, expected) is None


# --- 7. Data chunked along the axis, updates aimed across its chunks ---------------------------


def _values(dtype: str, rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype == "int8":
        return rng.integers(-128, 128, shape).astype(np.int8)  # add and mul wrap
    if dtype == "float16":
        values = rng.standard_normal(shape).astype(np.float16) * np.float16(300)
        values.flat[::7], values.flat[::5] = np.float16(-0.0), np.float16(np.nan)
        return values
    words = np.array(["", "a", "ab", "b", "é", "z\0", "中"], dtype=object)
    return words[rng.integers(0, len(words), shape)]


SPREAD = [
    pytest.param(dtype, reduction, id=f"{dtype}-{reduction}")
    for dtype in ("bool", "int8", "float16", "object")
    for reduction in scatterx.REDUCTIONS
    if not (dtype == "object" and reduction == "mul")
]


@pytest.mark.parametrize(("dtype", "reduction"), SPREAD)
@pytest.mark.parametrize("axis", [0, 1])
def test_updates_across_chunks_of_the_axis(dtype: str, reduction: str, axis: int) -> None:
    rng = np.random.default_rng(7)
    data = _values(dtype, rng, (6, 7))
    size = data.shape[axis]
    index_shape = (9, 7) if axis == 0 else (6, 11)
    indices = rng.integers(-size, size, index_shape)
    updates = _values(dtype, rng, index_shape)
    chunks = ((2, 3, 1), (3, 4)) if axis == 0 else ((3, 3), (2, 2, 3))
    arrays = (data, indices, updates)
    result, expected = _both(arrays, (chunks, 4, 3), axis=axis, reduction=reduction)
    free_nans = reduction in ("add", "mul")  # NaN payloads of two NaN operands: section 2
    assert first_difference(result.compute(), expected, any_nan=free_nans) is None


@pytest.mark.parametrize("reduction", scatterx.REDUCTIONS)
def test_raw_bools_in_a_chunk_no_update_reaches(reduction: str) -> None:
    data = np.array([2, 0, 255, 1, 0, 7], np.uint8).view(bool)
    arrays = (data, np.array([0, 1]), np.array([True, False]))  # nothing reaches [3:6]
    result, expected = _both(arrays, (3, 3, 3), reduction=reduction)
    assert first_difference(result.compute(), expected) is None


@pytest.mark.parametrize(
    "make",
    [
        lambda: da.random.randint(-9, 9, (40, 6), chunks=(10, -1)),
        lambda: da.random.default_rng(0).integers(-9, 9, (40, 6), chunks=(10, -1)),
        lambda: (da.arange(240).reshape(40, 6) % 18 - 9).rechunk((15, 2)),
    ],
    ids=["random-randint", "generator-integers", "arange-rechunked"],
)
def test_indices_from_fused_graphs_are_checked_and_scattered(make: Callable[[], Any]) -> None:
    """The guard reads its own copy of the indices' graph; random and rechunked graphs
    (whose tasks dask fuses when it optimises) give the same values to both."""
    indices = make()
    data = da.ones((40, 9), dtype=np.float64, chunks=(10, 3))
    updates = da.arange(240, dtype=np.float64).reshape(40, 6).rechunk((20, 3))
    result = scatterx.scatter_elements(data, indices, updates, axis=1, reduction="add")
    arrays = (data.compute(), indices.compute(), updates.compute())
    expected = scatterx.scatter_elements(*arrays, axis=1, reduction="add", backend="numpy")
    assert result.compute().tobytes() == expected.tobytes()
    _, message = checks.first_bad(arrays[1] - 1, 1, 9)  # some -10s: out of bounds
    with pytest.raises(IndexError, match=message):
        scatterx.scatter_elements(data, indices - 1, updates, axis=1).compute()


def test_import_and_numpy_calls_do_not_load_dask() -> None:
    code = (
        "import sys, numpy as np, scatterx, scatterx_dask\n"
        "scatterx.backends(); scatterx_dask.backend.available()\n"
        "scatterx.scatter_elements(np.zeros(3), np.array([1]), np.array([2.0]))\n"
        "print('dask' in sys.modules)"
    )
    assert run_python(code).strip() == "False"


def test_available_says_why_without_dask(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "dask" else real(name, *a)
    )
    assert DaskBackend().available() == "dask is not installed (pip install 'scatterx[dask]')"
