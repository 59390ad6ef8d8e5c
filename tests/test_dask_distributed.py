"""The dask backend on the threaded scheduler and on a ``dask.distributed`` cluster.

The cluster (2 worker processes, 1 thread each) is started here, once for the module. Its
workers neither spill nor pause: a task graph that needs more memory than a worker has
makes the nanny kill that worker (at 95% of its limit), and with no retry allowed the
computation fails at once instead of hiding the blow-up behind disk or a hang.
"""

from __future__ import annotations

import os
import re
import resource
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import _dask_checks as checks
import scatterx
from scatterx.backend import out_of_bounds_error

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
cloudpickle = pytest.importorskip("cloudpickle")

# One cluster for the module: its tests run in one xdist worker.
pytestmark = pytest.mark.xdist_group("dask-distributed")

# A worker's limit: its resident baseline (about 95 MiB started, 210 MiB once numba and
# scatterx are imported and a few kernels compiled, measured) plus the larger-than-memory
# test's working set (about 80-120 MiB measured: a few blocks of 8 MiB and their
# temporaries, and what malloc keeps), with room to spare below the 95% that kills.
MEMORY_LIMIT = 448 * 2**20
TERMINATE = 0.95
CLUSTER_CONFIG = {
    # No spilling (it would hide a blow-up) and no pausing (a paused worker that cannot
    # free memory hangs); the nanny kills a worker at 95%, and a killed task is not retried.
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": TERMINATE,
    "distributed.scheduler.allowed-failures": 0,
}


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A client of a fresh LocalCluster: 2 worker processes with 1 thread each."""
    with dask.config.set(CLUSTER_CONFIG):
        yield from checks.cluster_client(
            __name__,
            memory_limit=MEMORY_LIMIT,
            # No dashboard; the scheduler's HTTP routes on a free port, not on 8787.
            scheduler_kwargs={"dashboard_address": ":0"},
            # More numba threads than the worker's one core: process_cores must say 1.
            env={"NUMBA_NUM_THREADS": "2"},
        )


def _compute(array: Any, where: str, request: pytest.FixtureRequest) -> Any:
    """``array`` computed on the threaded scheduler or on the module's cluster."""
    if where == "threads":
        return array.compute(scheduler="threads")
    return request.getfixturevalue("client").compute(array).result(timeout=120)


def _inputs(
    rng: np.random.Generator, shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Data with NaNs and signed zeros; indices, negative ones too, with many repeats.

    float32: the numba kernels that blocks of 8192 updates or more run (on the int32
    positions the backend routes) are then those the conformance matrix compiles.
    """
    data = rng.standard_normal(shape).astype(np.float32)
    data.flat[::7] = -0.0
    data.flat[::11] = np.nan
    size = shape[axis]
    indices = rng.integers(-size, size, index_shape)
    updates = rng.standard_normal(index_shape).round(1).astype(np.float32)  # ties, signed zeros
    updates.flat[::13] = np.nan
    return data, indices, updates


# data shape, indices shape, axis, reduction; chunks of data, indices, updates
CASES = [
    pytest.param((20, 30), (26, 30), 0, "add", (7, 11), (4, 9), (6, 10), id="axis0-add-along"),
    pytest.param((30, 8), (41, 6), 0, "add", (30, 3), (9, 4), (13, 6), id="axis0-add-across"),
    pytest.param((12, 40), (12, 25), -1, "none", (5, 40), (12, 8), (3, 25), id="last-none"),
    pytest.param((12, 40), (10, 55), 1, "none", (4, 9), (3, 20), (10, 7), id="last-none-along"),
    pytest.param(
        (6, 9, 20), (5, 9, 33), 2, "max", (2, 4, 7), (5, 3, 7), (1, 9, 33), id="3d-last-max"
    ),
    pytest.param((6, 9, 20), (11, 8, 3), 0, "max", (6, 4, 20), (2, 8, 1), (4, 3, 3), id="3d-max"),
    # Blocks of 8192 updates or more: their tasks run numba, not numpy.
    pytest.param(
        (200, 300), (260, 300), 0, "add", (70, 150), (130, 150), (65, 300), id="numba-add"
    ),
    pytest.param(
        (64, 5000), (64, 3000), 1, "none", (16, 5000), (16, 1000), (32, 3000), id="numba-none"
    ),
    pytest.param(
        (64, 5000), (60, 7000), 1, "max", (16, 2000), (20, 3500), (15, 7000), id="numba-max"
    ),
]


@pytest.mark.parametrize("where", ["threads", "cluster"])
@pytest.mark.parametrize(("shape", "index_shape", "axis", "reduction", "dc", "ic", "uc"), CASES)
def test_equals_the_oracle_bit_for_bit(
    where: str,
    shape: tuple[int, ...],
    index_shape: tuple[int, ...],
    axis: int,
    reduction: str,
    dc: tuple[int, ...],
    ic: tuple[int, ...],
    uc: tuple[int, ...],
    request: pytest.FixtureRequest,
) -> None:
    rng = np.random.default_rng(len(shape) * 100 + axis)
    data, indices, updates = _inputs(rng, shape, index_shape, axis)
    expected = scatterx.scatter_elements(
        data, indices, updates, axis=axis, reduction=reduction, backend="numpy"
    )
    lazy = scatterx.scatter_elements(
        da.from_array(data, chunks=dc),
        da.from_array(indices, chunks=ic),
        da.from_array(updates, chunks=uc),
        axis=axis,
        reduction=reduction,
    )
    assert isinstance(lazy, da.Array)
    assert lazy.chunks == da.from_array(data, chunks=dc).chunks
    got = np.asarray(_compute(lazy, where, request))
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()
    assert got.tobytes() != data.tobytes()  # the updates did something


# data shape, indices shape, axis; chunks of data, indices. Data chunked along the axis:
# the requests are routed to its blocks and the elements back. The last case's splits hold
# 75,000 indices each: on a cluster, its lanes travel as shares.
GATHER_CASES = [
    pytest.param((20, 30), (26, 30), 0, (7, 11), (4, 9), id="axis0-along"),
    pytest.param((12, 40), (10, 55), 1, (4, 9), (3, 20), id="last-along"),
    pytest.param((1000,), (300_000,), 0, (250,), (75_000,), id="shares"),
]


@pytest.mark.parametrize("where", ["threads", "cluster"])
@pytest.mark.parametrize(("shape", "index_shape", "axis", "dc", "ic"), GATHER_CASES)
def test_gather_equals_the_numpy_backend_bit_for_bit(
    where: str,
    shape: tuple[int, ...],
    index_shape: tuple[int, ...],
    axis: int,
    dc: tuple[int, ...],
    ic: tuple[int, ...],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scatterx_dask import _plan

    monkeypatch.setattr(_plan, "MERGE_ALONG", False)  # routed, however small the data
    if where == "cluster":
        request.getfixturevalue("client")  # the default client while the graph is built
    rng = np.random.default_rng(len(shape) * 10 + axis)
    data, indices, _ = _inputs(rng, shape, index_shape, axis)
    expected = scatterx.gather_elements(data, indices, axis=axis, backend="numpy")
    lazy = scatterx.gather_elements(
        da.from_array(data, chunks=dc), da.from_array(indices, chunks=ic), axis=axis
    )
    if where == "cluster":  # (on threads too, once the module's client is the default)
        shares = sum("-share-" in str(key) for key in lazy.__dask_graph__())
        assert bool(shares) == (index_shape == (300_000,))
    got = np.asarray(_compute(lazy, where, request))
    assert (got.dtype, got.shape) == (expected.dtype, expected.shape)
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("where", ["threads", "cluster"])
def test_out_of_bounds_raises_the_first_in_c_order(
    where: str, request: pytest.FixtureRequest
) -> None:
    data = np.zeros((10, 12))
    indices = np.zeros((14, 12), np.int64)
    indices[9, 3] = 10  # later in C order, in an earlier block of columns
    indices[3, 7] = -11  # the first bad index in C order
    indices[12, 0] = 99
    lazy = scatterx.scatter_elements(
        da.from_array(data, chunks=(4, 5)),
        da.from_array(indices, chunks=(5, 4)),
        da.from_array(np.ones(indices.shape), chunks=(7, 6)),
        axis=0,
        reduction="add",
    )
    message = str(out_of_bounds_error(-11, (3, 7), 0, 10))
    with pytest.raises(IndexError, match=re.escape(message)):
        _compute(lazy, where, request)


@pytest.mark.parametrize("bad", [False, True])
def test_arrays_persisted_on_the_cluster(client: Any, bad: bool) -> None:
    """Blocks held as futures (``client.persist``): the guard reads them as they are (its
    clone of their graph once lost them), data chunked along the axis or not."""
    rng = np.random.default_rng(int(bad))
    data = rng.standard_normal((30, 4)).astype(np.float32)
    indices = rng.integers(-30, 30, (50, 4))
    if bad:
        indices[[7, 31], [2, 0]] = [30, -31]
    updates = rng.standard_normal((50, 4)).astype(np.float32)
    for data_chunks in [(30, 2), (7, 2)]:
        held = client.persist(
            [
                da.from_array(data, chunks=data_chunks),
                da.from_array(indices, chunks=(9, 2)),
                da.from_array(updates, chunks=(9, 2)),
            ]
        )
        distributed.wait(held)
        lazy = scatterx.scatter_elements(*held, axis=0, reduction="add")
        if bad:
            message = str(out_of_bounds_error(30, (7, 2), 0, 30))
            with pytest.raises(IndexError, match=re.escape(message)):
                client.compute(lazy).result()
            continue
        expected = scatterx.scatter_elements(
            data, indices, updates, axis=0, reduction="add", backend="numpy"
        )
        got = client.compute(lazy).result()
        np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


def _cores_in_worker() -> dict[str, int]:
    """What a task sees of the cores of its worker."""
    import numba

    from scatterx.backend import block_call
    from scatterx_dask import _cores

    n = 10_000  # enough updates for numba (numpy runs small calls)
    name, _ = block_call(np.zeros(n), np.arange(n), np.ones(n), 0, "add")
    return {
        "nthreads": distributed.get_worker().state.nthreads,
        "process_cores": _cores.process_cores(),
        "numba_threads_in_task": _cores.run_on_numba(numba.get_num_threads),
        "numba_max": numba.config.NUMBA_NUM_THREADS,
        "numba_chosen": int(name == "numba"),
    }


def test_numba_threads_do_not_exceed_the_workers_threads(client: Any) -> None:
    pytest.importorskip("numba")
    workers = list(client.scheduler_info()["workers"])
    futures = [client.submit(_cores_in_worker, workers=[w], pure=False) for w in workers]
    for seen in client.gather(futures):
        assert seen["numba_max"] == 2  # numba alone would start 2 threads per task
        assert seen["numba_chosen"] == 1
        assert seen["nthreads"] == 1
        assert seen["process_cores"] == 1
        assert seen["numba_threads_in_task"] == 1


# The larger-than-memory scatter: data of rows x COLS float64, axis 1, blocks of ROWS rows
# spanning the axis; indices and updates ROWS x INDEX_COLS per block. Every block is made
# on a worker from its seed, so the oracle of one block needs that block's inputs only.
COLS, INDEX_COLS, ROWS = 4096, 1024, 256
BLOCK_BYTES = ROWS * COLS * 8  # 8 MiB
BLOCKS = -(-9 * MEMORY_LIMIT // (2 * BLOCK_BYTES))  # 4.5 times a worker's limit
SEED = 2024


def _made(kind: str, i: int) -> np.ndarray[Any, Any]:
    """Block ``i`` of data, indices or updates, the same wherever it is made."""
    rng = np.random.default_rng((SEED, "diu".index(kind[0]), i))
    if kind == "data":
        return rng.random((ROWS, COLS))
    if kind == "indices":
        return rng.integers(-COLS, COLS, (ROWS, INDEX_COLS))
    return rng.random((ROWS, INDEX_COLS))


def _make(kind: str, block_info: Any = None) -> np.ndarray[Any, Any]:
    return _made(kind, block_info[None]["chunk-location"][0])


def _generated(kind: str, cols: int, dtype: Any) -> Any:
    chunks = ((ROWS,) * BLOCKS, (cols,))
    return da.map_blocks(_make, kind, chunks=chunks, dtype=dtype, meta=np.empty((0, 0), dtype))


def _check(block: np.ndarray[Any, Any], block_info: Any = None) -> np.ndarray[Any, Any]:
    """[mismatched elements, elements the updates changed] of one block of the result."""
    i = block_info[0]["chunk-location"][0]
    data = _made("data", i)
    expected = scatterx.scatter_elements(
        data, _made("indices", i), _made("updates", i), axis=1, reduction="add", backend="numpy"
    )
    mismatched = np.count_nonzero(block.view(np.uint64) != expected.view(np.uint64))
    changed = np.count_nonzero(expected.view(np.uint64) != data.view(np.uint64))
    return np.array([[mismatched, changed]])


def _pid_and_peak() -> tuple[int, int]:
    """This process's id and its peak resident memory so far, in bytes.

    Linux's ``VmHWM``, the peak of this process's own memory: ``ru_maxrss`` would count
    the peak of the process it was forked from too (kept across ``exec``), the test
    process's, not the worker's.
    """
    try:
        with open("/proc/self/status") as status:
            lines = [line for line in status if line.startswith("VmHWM:")]
        return os.getpid(), int(lines[0].split()[1]) * 1024
    except (OSError, IndexError):
        return os.getpid(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_scatter_into_data_larger_than_a_workers_memory(client: Any) -> None:
    data = _generated("data", COLS, np.float64)
    indices = _generated("indices", INDEX_COLS, np.int64)
    updates = _generated("updates", INDEX_COLS, np.float64)
    assert data.nbytes >= 4 * MEMORY_LIMIT
    result = scatterx.scatter_elements(data, indices, updates, axis=1, reduction="add")
    checks = result.map_blocks(_check, chunks=((1,) * BLOCKS, (2,)), dtype=np.int64)

    info = client.scheduler_info()["workers"]
    assert [w["memory_limit"] for w in info.values()] == [MEMORY_LIMIT] * 2
    before = client.run(_pid_and_peak)
    summary = client.compute(checks).result(timeout=120)
    after = client.run(_pid_and_peak)

    assert summary.shape == (BLOCKS, 2)
    assert not summary[:, 0].any(), f"blocks differing from the oracle: {summary[:, 0].nonzero()}"
    assert (summary[:, 1] > 0).all()
    # Same worker processes at the same addresses: none died, none was restarted.
    assert {a: pid for a, (pid, _) in after.items()} == {a: pid for a, (pid, _) in before.items()}
    assert after.keys() == info.keys() == client.scheduler_info()["workers"].keys()
    peaks = {address: peak for address, (_, peak) in after.items()}
    print(
        f"data {data.nbytes / 2**20:.0f} MiB, limit {MEMORY_LIMIT / 2**20:.0f} MiB, peaks",
        {a: f"{p / 2**20:.0f} MiB" for a, p in peaks.items()},
    )
    assert max(peaks.values()) < TERMINATE * MEMORY_LIMIT
