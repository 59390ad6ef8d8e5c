"""The dask backend's routing of updates to data chunked along the axis (issue 25): a graph
that grows with the blocks, not their product, and the loop's bits through every stage."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import scatterx
from _subprocess import run_python
from scatterx_dask import _lanes, _plan, _route, _split

da = pytest.importorskip("dask.array")

Array = np.ndarray[Any, Any]


@pytest.fixture(autouse=True)
def _routed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Data chunked along the axis is routed to here, however small (not put whole first:
    see :func:`scatterx_dask._plan.merged_along`)."""
    monkeypatch.setattr(_plan, "MERGE_ALONG", False)


def _tasks(n: int) -> int:
    """The tasks of the issue's example: ``n`` elements, chunks of 1 everywhere."""
    indices = da.from_array(np.arange(n) % 7, chunks=1)
    result = scatterx.scatter_elements(
        da.zeros(n, chunks=1), indices, da.ones(n, chunks=1), reduction="add"
    )
    return len(result.__dask_graph__())


def test_the_graph_grows_with_the_blocks_not_their_product() -> None:
    small, large = _tasks(100), _tasks(400)
    assert large < 5 * small  # quadratic: 16x (10,506 and 162,015 tasks before)
    assert large < 12 * 400


@pytest.mark.parametrize(
    ("origins", "destinations", "fan_in"), [(1, 9, 2), (9, 1, 2), (7, 30, 3), (2000, 2000, 32)]
)
def test_the_stages_reach_every_destination(origins: int, destinations: int, fan_in: int) -> None:
    count, base = _route.stages(origins, destinations, fan_in)
    assert 2 <= base <= max(fan_in, 2)
    assert base**count >= max(origins, destinations) > (base - 1) ** count
    last = base**count
    assert all(_route.exists(k, last, origins, destinations) for k in range(destinations))


@pytest.mark.parametrize("fan_in", [2, 3, 32])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max"])
def test_routed_updates_keep_the_loops_bits(
    monkeypatch: pytest.MonkeyPatch, fan_in: int, axis: int, reduction: str
) -> None:
    """Float32 sums over many duplicates, through several stages of small fan-in: the
    order per element is the loop's, so the bits are the numpy backend's."""
    monkeypatch.setattr(_lanes, "ROUTE_FAN_IN", fan_in)
    rng = np.random.default_rng(fan_in * 10 + axis)
    shape, index_shape = [[23, 5], [5, 23]][axis], [[61, 4], [4, 61]][axis]
    data = rng.standard_normal(shape).astype(np.float32)
    indices = rng.integers(-23, 23, index_shape)
    updates = (rng.standard_normal(index_shape) * 1e3).astype(np.float32)
    data_chunks = [((3, 0, 7, 1, 12), (2, 3)), ((2, 3), (3, 0, 7, 1, 12))][axis]
    index_chunks = [((5,) * 12 + (1,), (1, 3)), ((1, 3), (5,) * 12 + (1,))][axis]
    arrays = (
        da.from_array(data, chunks=data_chunks),
        da.from_array(indices, chunks=index_chunks),
        da.from_array(updates, chunks=index_chunks),
    )
    got = scatterx.scatter_elements(*arrays, axis=axis, reduction=reduction).compute()
    expected = scatterx.scatter_elements(
        data, indices, updates, axis=axis, reduction=reduction, backend="numpy"
    )
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("fan_in", [2, 3, 32])
@pytest.mark.parametrize("axis", [0, 1])
def test_routed_gathers_keep_the_numpy_backends_bits(
    monkeypatch: pytest.MonkeyPatch, fan_in: int, axis: int
) -> None:
    """A gather's requests through several stages of small fan-in there, and its elements
    through as many back: each element comes back to its place."""
    monkeypatch.setattr(_lanes, "ROUTE_FAN_IN", fan_in)
    rng = np.random.default_rng(fan_in * 10 + axis)
    shape, index_shape = [[23, 5], [5, 23]][axis], [[61, 4], [4, 61]][axis]
    data = rng.standard_normal(shape).astype(np.float32)
    indices = rng.integers(-23, 23, index_shape)
    data_chunks = [((3, 0, 7, 1, 12), (2, 3)), ((2, 3), (3, 0, 7, 1, 12))][axis]
    index_chunks = [((5,) * 12 + (1,), (1, 3)), ((1, 3), (5,) * 12 + (1,))][axis]
    lazy = scatterx.gather_elements(
        da.from_array(data, chunks=data_chunks),
        da.from_array(indices, chunks=index_chunks),
        axis=axis,
    )
    graph = lazy.__dask_graph__()
    stages = {str(key[0]).split(lazy.name)[1] for key in graph if "-route-" in str(key[0])}
    # 13 blocks of indices in runs of the fan-in (7 runs, 5, 1), to 5 blocks of data: 3, 2
    # and 1 stages each way, the last of which reads or puts in place (not a "-route-")
    assert (
        stages
        == {
            2: {"-route-0", "-route-1", "-back-route-0", "-back-route-1"},
            3: {"-route-0", "-back-route-0"},
            32: set(),
        }[fan_in]
    )
    expected = scatterx.gather_elements(data, indices, axis=axis, backend="numpy")
    assert lazy.compute().tobytes() == expected.tobytes()


def test_a_block_all_updates_aim_at_and_blocks_none_reach() -> None:
    data = np.arange(12.0)
    indices = np.full(30, 5)
    updates = np.arange(30.0)
    got = scatterx.scatter_elements(
        da.from_array(data, chunks=2),
        da.from_array(indices, chunks=4),
        da.from_array(updates, chunks=4),
        reduction="add",
    ).compute()
    expected = data.copy()
    expected[5] += updates.sum()
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("operation", ["scatter", "gather"])
def test_a_bad_string_is_told_at_its_place_in_the_whole_array(operation: str) -> None:
    """Issue 25, item 2: the position in the whole array, not in the block."""
    words = np.array(["a", "b", "c", "d", "e"], dtype=object)
    indices = da.from_array(np.arange(5), chunks=2)
    if operation == "scatter":
        updates = words.copy()
        updates[3] = 3
        call = scatterx.scatter_elements(
            da.from_array(words, chunks=2), indices, da.from_array(updates, chunks=2)
        )
        told = (
            r"updates is an object array and must hold str only; got 3 \(int\) at position \(3,\)"
        )
    else:
        words[4] = None
        call = scatterx.gather_elements(da.from_array(words, chunks=(3, 2)), indices)
        told = r"got None \(NoneType\) at position \(4,\)"
    with pytest.raises(TypeError, match=told):
        call.compute()


@pytest.mark.parametrize("read", [True, False], ids=["read", "not-read"])
def test_a_missing_string_is_told_at_its_place_whether_read_or_not(read: bool) -> None:
    """StringDType's missing value, as the numpy backend tells it: at its position in the
    whole data, also in a block of data that no index reads."""
    kind = np.dtypes.StringDType(na_object=None)
    data = np.array([["a"] * 9] * 5, kind)
    data[3, 7] = None
    indices = np.full((4, 13), 7 if read else 0)
    told = r"data holds the missing value None .* at position \(3, 7\)"
    with pytest.raises(TypeError, match=told):
        scatterx.gather_elements(data, indices, axis=1, backend="numpy")
    lazy = da.from_array(data, chunks=(2, 3))
    call = scatterx.gather_elements(lazy, da.from_array(indices, chunks=(2, 4)), axis=1)
    with pytest.raises(TypeError, match=told):
        call.compute()


@pytest.mark.parametrize(
    ("chunks", "dtype"),
    [
        ((1000,) * 9 + (537,), np.float32),  # regular: found by a product
        ((1500, 0, 2500, 3000, 2037), np.float64),  # irregular, an empty block: a search
        ((1000,) * 9 + (537,), np.float16),  # values numba does not move: numpy takes them
        ((1000,) * 9 + (537,), np.dtype(">f4")),
    ],
)
def test_the_counting_sort_matches_numpys_stable_sort(chunks: tuple[int, ...], dtype: Any) -> None:
    """Runs of 2^16 updates and more go to the numba kernel: the same order, places and
    values as numpy's stable sort, negative and out-of-bounds indices included."""
    pytest.importorskip("numba")
    size = sum(chunks)
    rng = np.random.default_rng(len(chunks))
    target = rng.integers(-size - 3, size + 3, _split.NUMBA_FROM + 17)
    values = rng.standard_normal(target.size).astype(dtype)
    starts = np.asarray(_lanes.starts(chunks), dtype=np.int64)
    spans = (size, _lanes._width(chunks))
    got = _split.by_destination(target, values, starts, spans, (np.int64, True))
    order, local, counts = _split._numpy(target, starts, *spans)
    np.testing.assert_array_equal(got.order, order)
    np.testing.assert_array_equal(got.local, local)
    np.testing.assert_array_equal(got.counts, counts)
    assert not got.clean  # some out of bounds: the split looks for the first
    inside = np.clip(target, -size, size - 1)
    assert _split.by_destination(inside, values, starts, spans, (np.int64, True)).clean
    assert got.values.dtype == values.dtype
    np.testing.assert_array_equal(got.values.view(np.uint8), values[order].view(np.uint8))


# Eight threads ask for the counting sort at once in a fresh process, as the splits of a
# threaded scheduler's first compute do; the number of kernels they were given.
ONE_KERNEL_SCRIPT = """
import threading
from scatterx_dask import _split

start = threading.Barrier(8)
made = []


def split():
    start.wait()
    made.append(_split._kernel())


threads = [threading.Thread(target=split) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(len({id(kernel) for kernel in made}))
"""


def test_threads_asking_at_once_share_one_counting_sort() -> None:
    """One kernel per process: each one made would load (or compile) its code again."""
    pytest.importorskip("numba")
    assert run_python(ONE_KERNEL_SCRIPT).strip() == "1"


@pytest.mark.parametrize("axis", [0, 1])
def test_large_runs_keep_the_loops_bits(axis: int) -> None:
    """Runs large enough for the counting sort, data in irregular blocks along the axis,
    2-D (flat positions from the order): float32 sums, bitwise the numpy backend's."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(axis)
    shape, index_shape = [[50, 3], [3, 50]][axis], [[140_000, 3], [3, 140_000]][axis]
    data = rng.standard_normal(shape).astype(np.float32)
    indices = rng.integers(-50, 50, index_shape)
    updates = (rng.standard_normal(index_shape) * 1e3).astype(np.float32)
    along = (7, 13, 20, 10)
    data_chunks = [(along, (2, 1)), ((2, 1), along)][axis]
    index_chunks = [((70_000, 70_000), (2, 1)), ((2, 1), (70_000, 70_000))][axis]
    got = scatterx.scatter_elements(
        da.from_array(data, chunks=data_chunks),
        da.from_array(indices, chunks=index_chunks),
        da.from_array(updates, chunks=index_chunks),
        axis=axis,
        reduction="add",
    ).compute()
    expected = scatterx.scatter_elements(
        data, indices, updates, axis=axis, reduction="add", backend="numpy"
    )
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


def test_runs_of_blocks_bound_a_splits_memory() -> None:
    fan_in, small = _lanes.ROUTE_FAN_IN, _lanes.SMALL_RUN
    # 1,000 blocks of updates to 100 of data: runs of 10, as many lanes as blocks
    assert _lanes.runs((100_000,) * 1000, 100, 1) == [range(i, i + 10) for i in range(0, 1000, 10)]
    # blocks of 1 element: runs of the fan-in, the most blocks a task reads
    assert [len(r) for r in _lanes.runs((1,) * 100, 100, 1)] == [fan_in] * 3 + [4]
    # large blocks, as many as data's: one each
    assert _lanes.runs((small,) * 5, 5, 1) == [range(i, i + 1) for i in range(5)]
    # small blocks with many elements off the axis: runs up to SMALL_RUN updates
    runs = _lanes.runs((4,) * 40, 40, small // 8)
    assert [len(r) for r in runs] == [2] * 20


def test_the_guard_finds_the_first_bad_index_across_blocks_it_checks_together() -> None:
    indices = np.zeros(40, np.int64)
    indices[[33, 17, 30]] = [-12, 9, 8]  # the first in C order, checked with the third
    data = da.zeros(8, chunks=2)
    call = scatterx.scatter_elements(
        data, da.from_array(indices, chunks=1), da.ones(40, chunks=1), reduction="add"
    )
    with pytest.raises(IndexError, match=r"index 9 at position \(17,\)"):
        call.compute()


def test_the_splits_find_the_first_bad_index_of_a_large_run() -> None:
    """Runs large enough for the counting sort, which counts the indices out of bounds as it
    reads them: the first bad index of the whole, in C order, across two columns."""
    pytest.importorskip("numba")
    indices = np.zeros((2, 140_000), np.int64)
    indices[1, 5] = 50  # earlier along the axis, later in C order
    indices[0, 100_001] = -51  # the first in C order
    call = scatterx.scatter_elements(
        da.zeros((2, 50), chunks=(1, 7)),
        da.from_array(indices, chunks=(1, 70_000)),
        da.ones(indices.shape, chunks=(1, 70_000)),
        axis=1,
        reduction="add",
    )
    with pytest.raises(IndexError, match=r"index -51 at position \(0, 100001\)"):
        call.compute()


def test_the_splits_read_each_block_of_indices_once() -> None:
    """With data chunked along the axis the splits check the bounds: no clone of the
    indices' graph computes them a second time for the guard."""
    made: list[int] = []

    def block(block_info: Any = None) -> Array:
        start = block_info[None]["array-location"][0][0]
        made.append(start)
        return (np.arange(start, start + 5) * 3) % 12

    indices = da.map_blocks(block, chunks=((5,) * 6,), dtype=np.int64)
    got = scatterx.scatter_elements(
        da.zeros(12, chunks=4), indices, da.ones(30, chunks=5), reduction="add"
    ).compute(scheduler="sync")
    assert sorted(made) == list(range(0, 30, 5))
    np.testing.assert_array_equal(got, np.bincount(np.arange(30) * 3 % 12, minlength=12))


def _shares(monkeypatch: pytest.MonkeyPatch, sizes: tuple[int, int], chunks: int) -> int:
    """The share tasks of a graph built as on a cluster: ``sizes`` elements of data and of
    updates, each in ``chunks`` chunks."""
    from scatterx_dask import _run

    monkeypatch.setattr(_run, "_on_a_cluster", lambda: True)
    size, count = sizes
    indices = da.zeros(count, dtype=np.int64, chunks=count // chunks)
    result = scatterx.scatter_elements(
        da.zeros(size, chunks=size // chunks),
        indices,
        da.ones(count, chunks=count // chunks),
        reduction="add",
    )
    return sum("-share-" in str(key) for key in result.__dask_graph__())


def test_on_a_cluster_only_large_lanes_travel_as_shares(monkeypatch: pytest.MonkeyPatch) -> None:
    """A share task per reader halves the bytes a large lane sends between workers, but
    costs a cluster a task each: lanes of few updates travel whole."""
    small = _lanes.SMALL_RUN
    assert _shares(monkeypatch, (64, 64 * small), 64) > 0  # a lane of `small` updates
    # blocks of small / 128 updates: runs of 32 blocks (the most a split reads), small / 4
    assert _shares(monkeypatch, (64, 64 * small // 128), 64) == 0
    assert _shares(monkeypatch, (2000, 2000), 2000) == 0  # the chunks of 1


@pytest.mark.parametrize("operation", ["scatter", "gather"])
def test_runs_and_shares_count_the_indices_not_datas_width(
    monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    """Indices one column wide against data 64 wide: a split of all 4,096 of them, whose
    lanes are small enough to travel whole on a cluster (no shares)."""
    from scatterx_dask import _run

    monkeypatch.setattr(_run, "_on_a_cluster", lambda: True)
    data = da.zeros((1000, 64), chunks=(250, 64))
    indices = da.zeros((4096, 1), dtype=np.int64, chunks=(1024, 1))
    if operation == "scatter":
        result = scatterx.scatter_elements(data, indices, da.ones((4096, 1), chunks=(1024, 1)))
    else:
        result = scatterx.gather_elements(data, indices)
    names = [str(key[0]) for key in result.__dask_graph__()]
    assert sum(name.endswith("-split") for name in names) == 1
    assert not any("-share-" in name for name in names)
