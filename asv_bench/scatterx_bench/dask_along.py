"""The along-axis case of the Dask bench (issue 25): 1-D data chunked along the scatter axis,
indices and updates in chunks of their own, so that every block of updates may aim at every
block of data: the graph's size, its build time and the compute, on the threaded scheduler
and on a ``distributed.LocalCluster``.

Run ``python -m scatterx_bench.dask_along --help`` (from ``asv_bench/``), or
``python asv_bench/bench.py --library dask --dask-along N,M,U,R``. The arrays are made
block by block from seeds (on the workers, on a cluster), the result is reduced to its
float64 sum where it is made: nothing large travels, and the in-memory numba call on the
same arrays held as NumPy arrays is timed beside it (``--numba``) where they fit.

Each is run ``--repeat`` times (3 by default) in one process or cluster, and both its
first run and its best are reported. The first compute of a process is the one that maps
fresh memory: the splits' answers (about the size of the indices and updates, held until
the applies read them) fault in page by page, where later computes reuse the memory the
allocator kept from the one before; the numba call's best of 3 likewise reuses its result's
memory. Here that made the first compute up to 4 times the later ones (docs/backends/dask.md).
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from scatterx import gather_elements, scatter_elements

from .dask_scaling import _module, _peak_rss


@dataclass(frozen=True)
class AlongConfig:
    """``size`` float32 elements of data in ``data_chunks`` chunks; ``updates`` updates (add)
    in ``update_chunks`` chunks, their indices uniform over the axis. With ``gather``, the
    gather of random data at those indices instead."""

    size: int
    data_chunks: int
    updates: int
    update_chunks: int
    seed: int = 25
    gather: bool = False

    @classmethod
    def parse(cls, spec: str) -> AlongConfig:
        """``"N,M,U,R"``: data size, its chunks, the updates, their chunks."""
        size, data_chunks, updates, update_chunks = (int(float(p)) for p in spec.split(","))
        return cls(size, data_chunks, updates, update_chunks)

    def label(self) -> str:
        arrow = "->" if self.gather else "<-"
        return f"{self.size:.0e}/{self.data_chunks} {arrow} {self.updates:.0e}/{self.update_chunks}"


def _chunks(total: int, count: int) -> tuple[int, ...]:
    base, extra = divmod(total, count)
    return tuple(base + (i < extra) for i in range(count))


def _block(seed: int, role: int, high: int, block_info: Any = None) -> Any:
    info = block_info[None]
    rng = np.random.default_rng([seed, role, *info["chunk-location"]])
    if role == 0:
        return np.zeros(info["chunk-shape"], np.float32)
    if high:
        return rng.integers(0, high, info["chunk-shape"], dtype=np.int64)
    return rng.random(info["chunk-shape"], dtype=np.float32)


def along_arrays(config: AlongConfig) -> tuple[Any, Any, Any]:
    """Data, indices and updates of ``config``, as Dask arrays made block by block."""
    da = _module("dask.array")
    data_chunks = (_chunks(config.size, config.data_chunks),)
    chunks = (_chunks(config.updates, config.update_chunks),)
    make = da.map_blocks
    role = 3 if config.gather else 0  # a gather reads random data; a scatter adds to zeros
    data = make(_block, config.seed, role, 0, chunks=data_chunks, dtype=np.float32)
    indices = make(_block, config.seed, 1, config.size, chunks=chunks, dtype=np.int64)
    updates = make(_block, config.seed, 2, 0, chunks=chunks, dtype=np.float32)
    return data, indices, updates


@dataclass
class AlongResult:
    """One run of the case: where, the graph, the times, the memory, the answer."""

    config: AlongConfig
    where: str  # "threads" or "N workers"
    tasks: int  # of the scatter's result, its inputs included
    build_s: float  # the call: planning and building the graph
    compute_s: float  # the first compute of the sum of the result (its optimisation included)
    peak_bytes: list[int | None]  # per worker process (VmHWM); threads: this process
    total: float  # the float64 sum of the result
    best_s: float  # the best of the computes, the first included
    cpu_s: tuple[float, float]  # CPU seconds of the first, and the least
    # (threads: this process; a cluster: its workers and this process, with the scheduler)


class InMemory(NamedTuple):
    """The in-memory numba call on the case's arrays: its first call and the best of
    ``repeat`` (the first included), in seconds, and the float64 sum of its result."""

    first_s: float
    best_s: float
    total: float


def _repeated(
    compute: Callable[[], float], cpu: Callable[[], float], repeat: int
) -> tuple[float, float, tuple[float, float], float]:
    """``repeat`` (at least 1) timed calls of ``compute``: the first's wall and CPU seconds
    (``cpu`` says the CPU seconds so far), the best wall, the least CPU, and the answer."""
    walls: list[float] = []
    cpus: list[float] = []
    total = math.nan
    for _ in range(max(1, repeat)):
        used = cpu()
        began = time.perf_counter()
        total = compute()
        walls.append(time.perf_counter() - began)
        cpus.append(cpu() - used)
    return walls[0], min(walls), (cpus[0], min(cpus)), total


def _call(
    config: AlongConfig, data: Any, indices: Any, updates: Any, backend: str | None = None
) -> Any:
    """The case's call: the scatter (add), or with ``config.gather`` the gather."""
    if config.gather:
        return gather_elements(data, indices, backend=backend)
    return scatter_elements(data, indices, updates, reduction="add", backend=backend)


def _summed(config: AlongConfig, arrays: tuple[Any, ...] | None = None) -> tuple[Any, int, float]:
    data, indices, updates = along_arrays(config) if arrays is None else arrays
    began = time.perf_counter()
    result = _call(config, data, indices, updates)
    tasks = len(result.__dask_graph__())
    build_s = time.perf_counter() - began
    return result.astype(np.float64).sum(), tasks, build_s


def run_threads(config: AlongConfig, persist: bool = False, repeat: int = 3) -> AlongResult:
    """The case on the threaded scheduler of this process, computed ``repeat`` times; with
    ``persist``, its arrays made first and held in memory, so that the compute times the
    scatter alone."""
    dask = _module("dask")
    arrays = dask.persist(*along_arrays(config), scheduler="threads") if persist else None
    _warm()
    summed, tasks, build_s = _summed(config, arrays)
    _peak_rss(True)
    first, best, cpu, total = _repeated(
        lambda: float(summed.compute(scheduler="threads")), time.process_time, repeat
    )
    return AlongResult(config, "threads", tasks, build_s, first, [_peak_rss()], total, best, cpu)


def _warm() -> float:
    """In a worker: one small case through the dask backend, as the timed one runs."""
    small = AlongConfig(size=4096, data_chunks=4, updates=1 << 18, update_chunks=2)
    data, indices, updates = (a.compute(scheduler="sync") for a in along_arrays(small))
    for kind in (np.int64, np.int32):  # the in-memory blocks' backend, the routed positions
        scatter_elements(data, indices.astype(kind), updates, reduction="add")
    gathered = _summed(replace(small, gather=True))[0].compute(scheduler="sync")
    return float(_summed(small)[0].compute(scheduler="sync")) + float(gathered)


def run_cluster(
    config: AlongConfig, workers: int, memory_limit: str, persist: bool = False, repeat: int = 3
) -> AlongResult:
    """The case on a new ``LocalCluster`` of ``workers`` one-thread worker processes,
    computed ``repeat`` times (``persist``: as for :func:`run_threads`, its arrays held in
    the workers' memory). Each compute's future is dropped before the next is asked for,
    so the scheduler forgets its keys and computes them again."""
    distributed = _module("distributed")
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            memory_limit=memory_limit,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.wait_for_workers(workers)
        client.run(_warm)  # scatterx and numba imported, kernels loaded: not timed
        arrays = None
        if persist:
            arrays = client.persist(along_arrays(config))
            distributed.wait(arrays)
        client.run(_peak_rss, True)
        summed, tasks, build_s = _summed(config, arrays)

        def cpu() -> float:  # the workers' and this process's (the scheduler runs here)
            return float(sum(client.run(time.process_time).values())) + time.process_time()

        first, best, used, total = _repeated(
            lambda: float(client.compute(summed).result()), cpu, repeat
        )
        peaks = list(client.run(_peak_rss).values())
    where = f"{workers} workers"
    return AlongResult(config, where, tasks, build_s, first, peaks, total, best, used)


def numba_s(config: AlongConfig, repeat: int = 3) -> InMemory:
    """The in-memory numba call on the case's arrays as NumPy arrays, ``repeat`` times."""
    data, indices, updates = (a.compute(scheduler="threads") for a in along_arrays(config))
    walls: list[float] = []
    result = data
    for _ in range(max(1, repeat)):
        began = time.perf_counter()
        result = _call(config, data, indices, updates, backend="numba")
        walls.append(time.perf_counter() - began)
    total = float(result.astype(np.float64).sum())
    return InMemory(walls[0], min(walls), total)


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:.0f}"


#: Compute: the first and the best of ``--repeat``, wall seconds; CPU: of the first, and
#: the least; numba: its first call and its best; ratio: the first, and the best, to
#: numba's best.
HEADER = (
    "| case | where | tasks | build s | compute s first | best | CPU s first | least | "
    "numba s first | best | ratio first | best | peak MiB | sum |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ratio(top: float, bottom: float | None) -> str:
    return "-" if bottom is None else f"{top / bottom:.2f}x"


def along_row(r: AlongResult, fast: InMemory | None) -> str:
    """One run's row of the table."""
    peaks = ", ".join(_mib(p) for p in r.peak_bytes)
    first, best = (None, None) if fast is None else fast[:2]
    cells = [r.config.label(), r.where, str(r.tasks), f"{r.build_s:.3f}"]
    cells += [_s(r.compute_s), _s(r.best_s), _s(r.cpu_s[0]), _s(r.cpu_s[1])]
    cells += [_s(first), _s(best), _ratio(r.compute_s, best), _ratio(r.best_s, best)]
    return "| " + " | ".join([*cells, peaks, f"{r.total:.6g}"]) + " |"


def print_along(results: list[AlongResult], numba: dict[AlongConfig, InMemory]) -> None:
    """The table: one row per run."""
    print(HEADER)
    for r in results:
        print(along_row(r, numba.get(r.config)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="+", metavar="N,M,U,R", help="the cases")
    parser.add_argument("--workers", type=int, action="append", help="a cluster of N workers")
    parser.add_argument("--no-threads", action="store_true", help="skip the threaded run")
    parser.add_argument("--memory-limit", default="2GiB", help="per worker (default: 2GiB)")
    parser.add_argument("--numba", action="store_true", help="time the in-memory numba call")
    parser.add_argument(
        "--persist", action="store_true", help="make the arrays first: time the scatter alone"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="computes (and numba calls) per run (default: 3)"
    )
    parser.add_argument(
        "--gather", action="store_true", help="gather data at the indices instead (N -> U)"
    )
    args = parser.parse_args(argv)
    print(HEADER, flush=True)  # each row as soon as it is measured
    for spec in args.specs:
        config = replace(AlongConfig.parse(spec), gather=args.gather)
        fast = numba_s(config, args.repeat) if args.numba else None
        places: list[int] = ([] if args.no_threads else [0]) + list(args.workers or ())
        for workers in places:
            found = (
                run_cluster(config, workers, args.memory_limit, args.persist, args.repeat)
                if workers
                else run_threads(config, args.persist, args.repeat)
            )
            print(along_row(found, fast), flush=True)


if __name__ == "__main__":
    main()
