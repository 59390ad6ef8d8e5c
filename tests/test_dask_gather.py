"""gather_elements on the dask backend: the numpy backend's bits under any chunking,
laziness, when each error is raised (contract.md sections 8 and 10), memory per task.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import _dask_checks as checks
import scatterx
from scatterx.backend import out_of_bounds_error
from scatterx.testing import first_difference

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
callbacks = pytest.importorskip("dask.callbacks")

Array = np.ndarray[Any, Any]


def _bfloat16() -> np.dtype[Any] | None:
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def _values(dtype: str, rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Seeded values with what a gather must carry bit for bit: raw bools (bytes other than
    0 and 1), -0.0, NaNs of many payloads, byte-swapped floats, strings."""
    if dtype == "bool":
        return rng.integers(0, 256, shape).astype(np.uint8).view(bool)
    if dtype in ("object", "StringDType"):
        words = np.array(["", "a", "ab", "é", "z\0", "中"], dtype=object)
        chosen = words[rng.integers(0, len(words), shape)]
        return chosen if dtype == "object" else chosen.astype(np.dtypes.StringDType())
    kind = _bfloat16() if dtype == "bfloat16" else np.dtype(dtype)
    if kind is None:
        pytest.skip("bfloat16 needs ml_dtypes")
    if kind.kind in "iu":
        info = np.iinfo(kind)
        return rng.integers(info.min, info.max, shape, dtype=kind, endpoint=True)
    values = (rng.standard_normal(shape) * 300).astype(kind)
    if kind.kind == "c":
        values.imag = rng.standard_normal(shape)
    flat = values.reshape(-1)
    flat[::7] = -0.0
    if kind.kind in "fV" and kind.isnative:  # NaNs of different payloads (float, bfloat16)
        width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[kind.itemsize]
        flat[3::5] = np.nan
        flat[3::5].view(width)[:] |= np.arange(flat[3::5].size, dtype=width) + 1
    return values


def _lazy(array: Array, chunks: Any) -> Any:
    return da.from_array(array, chunks=chunks, asarray=False)


def _both(data: Array, indices: Array, chunks: tuple[Any, Any], axis: int) -> tuple[Any, Array]:
    """The lazy result for ``data`` and ``indices`` in ``chunks``, and the numpy backend's."""
    result = scatterx.gather_elements(_lazy(data, chunks[0]), _lazy(indices, chunks[1]), axis=axis)
    return result, scatterx.gather_elements(data, indices, axis=axis, backend="numpy")


# --- 1. The numpy backend's bits, over dtypes, axes and chunkings ----------------------------

DTYPES = [
    "bool", "int8", "int64", "float16", "bfloat16", "float32", ">f4", "float64", "complex128",
    "object", "StringDType",
]  # fmt: skip

# (data chunks, indices chunks) for data (6, 7): indices (9, 5) along axis 0, (4, 11) along
# axis 1; both are shorter than data off the axis. "along" and "off" stand for data in 2s
# along (off) the axis and whole on the other dimension; "ragged", for indices in chunks
# of 1 then the rest.
CHUNKINGS: dict[str, tuple[Any, Any]] = {
    "one-chunk": (-1, -1),
    "data-along-axis": ("along", -1),
    "data-off-axis": ("off", (2, 3)),
    "both-blocks": ((4, 3), (3, 2)),
    "irregular": (((1, 0, 5), (3, 4)), "ragged"),
    "indices-finer": ((3, 7), 1),
}


def _chunks(chunking: str, axis: int, index_shape: tuple[int, ...]) -> tuple[Any, Any]:
    data, indices = CHUNKINGS[chunking]
    data = checks.side_chunks(data, axis)
    if indices == "ragged":
        indices = tuple((1, n - 1) for n in index_shape)
    return data, indices


@pytest.mark.parametrize("chunking", list(CHUNKINGS))
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", DTYPES)
def test_bits_equal_the_numpy_backend(dtype: str, axis: int, chunking: str) -> None:
    rng = np.random.default_rng(3)
    data = _values(dtype, rng, (6, 7))
    index_shape = (9, 5) if axis == 0 else (4, 11)
    indices = rng.integers(-data.shape[axis], data.shape[axis], index_shape)
    result, expected = _both(data, indices, _chunks(chunking, axis, index_shape), axis)
    assert (result.shape, result.dtype) == (expected.shape, expected.dtype)
    assert first_difference(result.compute(scheduler="sync"), expected) is None


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_three_dimensions_and_int32_indices(axis: int) -> None:
    rng = np.random.default_rng(axis + 10)
    data = rng.standard_normal((5, 6, 7)).astype(np.float32)
    index_shape = tuple(9 if d == axis % 3 else n - 1 for d, n in enumerate(data.shape))
    size = data.shape[axis]
    indices = rng.integers(-size, size, index_shape).astype(np.int32)
    result, expected = _both(data, indices, ((2, 4, 3), (4, 2, 5)), axis)
    assert first_difference(result.compute(scheduler="threads"), expected) is None


def test_result_chunks_follow_indices_lined_up_with_data() -> None:
    data, indices = np.arange(42.0).reshape(6, 7), np.zeros((9, 5), np.int64)
    sources = (data.copy(), indices.copy())
    result = scatterx.gather_elements(_lazy(data, (2, (3, 4))), _lazy(indices, (4, 1)), axis=0)
    assert isinstance(result, da.Array)
    assert result.chunks[1] == (3, 2)  # data's chunks off the axis, cut where indices end
    assert sum(result.chunks[0]) == 9
    expected = scatterx.gather_elements(data, indices, backend="numpy")
    assert first_difference(result.compute(), expected) is None
    assert data.tobytes() == sources[0].tobytes()
    assert indices.tobytes() == sources[1].tobytes()


@pytest.mark.parametrize("axis", [0, 1])
def test_empty_indices(axis: int, no_compute: list[Any]) -> None:
    data = np.arange(12, dtype=np.int16).reshape(3, 4).astype(">i2")
    empty = np.zeros((0, 4) if axis else (3, 0), np.int64)
    result = scatterx.gather_elements(_lazy(data, 2), _lazy(empty, 2), axis=axis)
    assert not no_compute
    assert (result.shape, result.dtype) == (empty.shape, data.dtype)
    assert result.chunks == _lazy(empty, 2).chunks
    expected = scatterx.gather_elements(data, empty, axis=axis, backend="numpy")
    assert first_difference(result.compute(scheduler="sync"), expected) is None


def test_random_indices_are_checked_and_gathered_alike() -> None:
    """The guard reads its own copy of the indices' graph: a random graph (fused when dask
    optimises) gives it the same values as the gather."""
    indices = da.random.default_rng(0).integers(-9, 9, (40, 6), chunks=(10, 3))
    data = da.arange(360.0, chunks=50).reshape(40, 9).rechunk((10, 4))
    result = scatterx.gather_elements(data, indices, axis=1)
    arrays = (data.compute(), indices.compute())
    expected = scatterx.gather_elements(*arrays, axis=1, backend="numpy")
    assert result.compute().tobytes() == expected.tobytes()
    _, message = checks.first_bad(arrays[1] - 1, 1, 9)  # some -10s: out of bounds
    with pytest.raises(IndexError, match=message):
        scatterx.gather_elements(data, indices - 1, axis=1).compute()


def test_blocks_run_on_the_backend_chosen_for_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each in-memory gather of a task (with data chunked along the axis, one flat read per
    block of data) runs on the backend scatterx chooses for it, numba on the cores its task
    can take; the bits stay the numpy backend's."""
    from scatterx_dask import _plan, _tasks

    monkeypatch.setattr(_plan, "MERGE_ALONG", False)  # routed, however small the data
    chosen: list[str] = []
    shared: list[int] = []

    def choose(*args: Any) -> Any:
        name, run = real_choice(*args)
        chosen.append(name)
        return name, run

    def counted(run: Any) -> Any:
        shared.append(1)
        return real(run)

    real, real_choice = _tasks.run_on_numba, _tasks.block_gather
    monkeypatch.setattr(_tasks, "run_on_numba", counted)
    monkeypatch.setattr(_tasks, "block_gather", choose)
    rng = np.random.default_rng(11)
    data = rng.standard_normal((60, 256)).astype(np.float32)
    indices = rng.integers(-60, 60, (300, 200))  # about 12,800 per block of data
    result, expected = _both(data, indices, ((20, 128), -1), 0)
    assert first_difference(result.compute(scheduler="threads"), expected) is None
    assert len(chosen) == 6  # one read per block of data
    assert len(shared) == chosen.count("numba")
    numba_gathers = scatterx.explain_gather(data.reshape(-1), indices[:, :128].reshape(-1))
    assert (numba_gathers.backend == "numba") == bool(shared)


# --- 2. Laziness, and memory per task -------------------------------------------------------


no_compute = pytest.fixture(checks.no_compute)


@pytest.mark.parametrize("chunks", [(-1, -1), ((2, 3), (4, 2))], ids=["one-chunk", "blocks"])
def test_nothing_is_computed_at_call_time(chunks: Any, no_compute: list[Any]) -> None:
    data, indices = _lazy(np.ones((6, 5)), chunks[0]), _lazy(np.zeros((8, 5), int), chunks[1])
    result = scatterx.gather_elements(data, indices)
    decision = scatterx.explain_gather(data, indices)
    checks.assert_lazy(result, decision, no_compute, "dask runs gather_elements")


def test_each_block_of_data_is_read_by_one_task() -> None:
    """Data in 8 chunks along the axis is never put together: each of its blocks is read
    by one task, and no task makes more than the largest input block but a split's run (its
    blocks of indices joined) and the elements read back to it."""
    from scatterx_dask import _lanes

    rng = np.random.default_rng(5)
    data, indices = rng.standard_normal((40, 6)), rng.integers(-40, 40, (40, 6))
    made: dict[Any, int] = {}
    lazy = _lazy(data, (5, 6))
    result = scatterx.gather_elements(lazy, _lazy(indices, (10, 6)))
    _, dependents = dask.core.get_deps(dict(result.__dask_graph__()))
    readers = [dependents[(lazy.name, i, 0)] for i in range(8)]
    assert all(len(r) == 1 and "-read" in str(next(iter(r))[0]) for r in readers)

    def size(value: Any) -> int:
        return int(np.size(value)) if isinstance(value, np.ndarray) else 0

    with callbacks.Callback(posttask=lambda key, value, *_: made.update({key: size(value)})):
        got = result.compute(scheduler="sync")
    ours = {key: n for key, n in made.items() if str(key[0]).startswith(result.name)}
    runs = _lanes.runs((10,) * 4, 8, 6)
    assert max(ours.values()) <= max(60, max(len(r) for r in runs) * 60)
    expected = scatterx.gather_elements(data, indices, backend="numpy")
    assert first_difference(got, expected) is None


def test_the_graph_grows_with_the_blocks_not_their_product() -> None:
    """Data and indices in chunks of 1 along the axis: about ten tasks per block, where a
    chain of one task per block of data for each block of indices made ``n`` squared."""

    def tasks(n: int) -> int:
        data = da.arange(n, dtype=np.float32, chunks=1)
        indices = da.from_array(np.arange(n) * 7 % n, chunks=1)
        return len(scatterx.gather_elements(data, indices).__dask_graph__())

    small, large = tasks(100), tasks(400)
    assert large < 5 * small  # quadratic: 16x (10,306 and 161,215 tasks before)
    assert large < 12 * 400


# --- 3. When each error is raised -----------------------------------------------------------


METADATA_ERRORS = [  # (data shape, indices shape, indices dtype, axis, error, message)
    ((6, 5), (4, 6), np.int64, 0, ValueError, "dimension 1"),
    ((6, 5), (4,), np.int64, 0, ValueError, "shape"),
    ((6, 5), (4, 5), np.float64, 0, TypeError, re.escape("indices.astype(np.int64)")),
    ((6, 5), (4, 5), np.int64, 2, ValueError, "axis"),
]


@pytest.mark.parametrize(
    ("data", "indices", "index_dtype", "axis", "error", "match"), METADATA_ERRORS
)
def test_metadata_errors_raise_at_call_time(
    data: tuple[int, ...],
    indices: tuple[int, ...],
    index_dtype: Any,
    axis: int,
    error: type[Exception],
    match: str,
    no_compute: list[Any],
) -> None:
    lazy = (_lazy(np.ones(data), 2), _lazy(np.zeros(indices, index_dtype), 2))
    with pytest.raises(error, match=match):
        scatterx.gather_elements(*lazy, axis=axis)
    assert not no_compute


@pytest.mark.parametrize("role", [0, 1], ids=["data", "indices"])
def test_unknown_chunk_sizes_and_mixed_libraries_raise_at_call_time(
    role: int, no_compute: list[Any]
) -> None:
    arrays = [np.ones((6, 5)), np.zeros((4, 5), np.int64)]
    lazy = [_lazy(a, 2) for a in arrays]
    unknown = list(lazy)
    unknown[role] = checks.with_unknown_sizes(lazy[role])
    name = ("data", "indices")[role]
    with pytest.raises(ValueError, match=rf"{name}\.compute_chunk_sizes\(\)"):
        scatterx.gather_elements(*unknown)
    mixed = list(lazy)
    mixed[role] = arrays[role]
    with pytest.raises(TypeError, match="one array library"):
        scatterx.gather_elements(*mixed)
    assert not no_compute


# By axis, indices (for data (6, 8)) with bad values in several blocks: the first in C order
# comes after another one along the axis (axis 1), or in a block after another one's (axis 0,
# with indices in blocks of (2, 4)).
BAD_INDICES: dict[int, tuple[tuple[int, int], dict[tuple[int, int], int]]] = {
    0: ((6, 8), {(2, 6): -7, (3, 0): 6, (5, 1): 10, (4, 7): 6}),
    1: ((5, 12), {(0, 10): 20, (1, 5): -9, (3, 2): 8, (4, 7): 99}),
}


BAD_CHUNKINGS = {
    "one-chunk": (-1, -1),  # one in-memory call reads every index: no guard
    "blocks": ((2, 3), (2, 4)),
    "data-along-axis": ((3, 3), -1),
    "indices-small": (-1, 1),
}


@checks.over_bounds_grid(BAD_CHUNKINGS)
def test_out_of_bounds_raises_the_first_in_c_order_at_compute(
    axis: int, chunking: str, scheduler: str
) -> None:
    data, indices = checks.bad_indices(*BAD_INDICES[axis])
    chunks = BAD_CHUNKINGS[chunking]
    with dask.config.set(scheduler=checks.refuse):
        result = scatterx.gather_elements(
            _lazy(data, chunks[0]), _lazy(indices, chunks[1]), axis=axis
        )
    _, message = checks.first_bad(indices, axis, data.shape[axis])
    parts = (result, result[-1:, -1:], result.blocks[(-1, -1)])  # no bad index in the last two
    checks.assert_each_raises(parts, message, scheduler)


def test_data_of_no_length_along_the_axis_has_no_valid_index() -> None:
    result = scatterx.gather_elements(_lazy(np.ones((0, 3)), 2), _lazy(np.zeros((2, 3), int), 1))
    message = re.escape(str(out_of_bounds_error(0, (0, 0), 0, 0)))
    with pytest.raises(IndexError, match=message):
        result.compute()
