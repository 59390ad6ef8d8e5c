"""``python asv_bench/bench.py --library dask``: the lazy route against the in-memory call.

performance.md's Dask target: on the threaded scheduler with chunks near 64 MiB, within
1.5x of the in-memory numba call; a data array larger than one worker's memory limit
completes on 2 workers under that limit.

The standard cases become Dask arrays chunked as ``docs/backends/dask.md`` recommends
(:func:`.dask_arrays.to_dask`). Each row times, in turns sample by sample
(:func:`.libraries.paired_ms`), the numba call on the NumPy arrays, ``persist`` of the lazy
result (its blocks computed and kept as a Dask array: the cost of going lazy) and
``compute`` (that, plus dask's copy of the blocks into one NumPy array, which
``dask.array.core.finalize`` makes on every compute); each includes building the graph.
The scaling case is :mod:`.dask_scaling`'s; the cases in a few blocks, :mod:`.dask_blocks`'s.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scatterx import BackendError, scatter_elements

from .base import BenchCase, Call, Unavailable
from .dask_along import (
    AlongConfig,
    AlongResult,
    InMemory,
    numba_s,
    print_along,
    run_cluster,
    run_threads,
)
from .dask_arrays import to_dask
from .dask_blocks import BLOCKS, block_calls, blocked, print_blocks
from .dask_scaling import CHUNK_SIZE, ScalingConfig, ScalingResult, _module, run_scaling
from .libraries import paired_ms, scatterx_call
from .report import Row

NUMBA = "numba on numpy"
PERSIST = "dask persist"
COMPUTE = "dask compute"
COLUMNS = (NUMBA, PERSIST, COMPUTE)
TARGET = 1.5  # performance.md: persist within 1.5x of the in-memory numba call
Skip = Callable[[str, str], None]


def lazy_call(moved: BenchCase, reduction: str) -> Callable[[], Any]:
    """A callable returning the lazy result of ``moved`` (Dask arrays) on the dask backend."""
    data, indices, updates = moved.arrays

    def lazy() -> Any:
        return scatter_elements(
            data, indices, updates, axis=moved.axis, reduction=reduction, backend="dask"
        )

    try:
        lazy()
    except BackendError as exc:
        raise Unavailable(str(exc)) from exc
    return lazy


def persist_call(moved: BenchCase, reduction: str) -> Call:
    """Build the graph and persist it on the threaded scheduler: the blocks, as a Dask array."""
    lazy = lazy_call(moved, reduction)
    return lambda: lazy().persist(scheduler="threads")


def compute_call(moved: BenchCase, reduction: str) -> Call:
    """Build the graph and compute it on the threaded scheduler: one NumPy array."""
    lazy = lazy_call(moved, reduction)
    return lambda: lazy().compute(scheduler="threads")


def describe_chunks(chunks: tuple[tuple[int, ...], ...]) -> str:
    """Chunks in a line: ``4096 x 2*2048`` (one dimension whole, the other in 2 of 2048)."""
    parts = []
    for sizes in chunks:
        if len(sizes) == 1:
            parts.append(str(sizes[0]))
        elif len(set(sizes[:-1])) == 1 and sizes[-1] <= sizes[0]:
            last = "" if sizes[-1] == sizes[0] else f"+{sizes[-1]}"
            whole = len(sizes) - (last != "")
            parts.append(f"{whole}*{sizes[0]}{last}")
        else:
            parts.append(f"{len(sizes)} chunks of {min(sizes)}..{max(sizes)}")
    return " x ".join(parts) if parts else "()"


@dataclass
class CaseLayout:
    """How one case was chunked, and the size of its result's graph."""

    chunks: dict[str, str]  # data, indices, updates: :func:`describe_chunks`
    blocks: dict[str, int]
    tasks: int  # in the result's whole graph, the inputs' tasks included


def layout(moved: BenchCase) -> CaseLayout:
    """The chunks of ``moved``'s arrays and the number of tasks of its lazy result."""
    roles = dict(zip(("data", "indices", "updates"), moved.arrays, strict=True))
    result = lazy_call(moved, "none")()
    return CaseLayout(
        {role: describe_chunks(a.chunks) for role, a in roles.items()},
        {role: math.prod(a.numblocks) for role, a in roles.items()},
        len(dict(result.__dask_graph__())),
    )


# -- the run: rows of the standard cases, then the scaling case ------------------------------


@dataclass
class DaskRun:
    """The measurements of ``--library dask``: rows of median ms, layouts, the scaling runs."""

    chunk_size: str = CHUNK_SIZE
    scaling_config: ScalingConfig | None = None
    library: str = "dask"
    rows: list[Row] = field(default_factory=list)
    layouts: dict[str, CaseLayout] = field(default_factory=dict)
    scaling: list[ScalingResult] = field(default_factory=list)
    along_configs: list[AlongConfig] = field(default_factory=list)
    along_workers: tuple[int, ...] = (2,)
    along: list[AlongResult] = field(default_factory=list)
    along_numba: dict[AlongConfig, InMemory] = field(default_factory=dict)
    blocks: tuple[int, ...] = BLOCKS  # the cases also in so many blocks, kept by case name:
    _blocked: dict[tuple[str, int], BenchCase] = field(default_factory=dict, repr=False)

    @property
    def columns(self) -> list[str]:
        found = {name for _, _, times in self.rows for name in times}
        return [name for name in COLUMNS if name in found]

    def move(self, case: BenchCase) -> BenchCase:
        """``case`` as Dask arrays (:func:`.dask_arrays.to_dask`); its layout kept for the table."""
        moved = to_dask(case, self.chunk_size)
        self.layouts[case.name] = layout(moved)
        return moved

    def time_row(
        self, case: BenchCase, moved: BenchCase, reduction: str, repeat: int, skip: Skip
    ) -> None:
        """Time numba on ``case`` (NumPy arrays), persist and compute on ``moved`` in turns."""
        calls: dict[str, Call] = {}
        try:
            calls[NUMBA] = scatterx_call("numba", case, reduction)
        except Unavailable as why:
            skip(NUMBA, str(why))
        try:
            calls[PERSIST] = persist_call(moved, reduction)
            calls[COMPUTE] = compute_call(moved, reduction)
        except Unavailable as why:
            skip("scatterx on dask", str(why))
            return
        for k in self.blocks:  # in turns with the others, sample by sample
            split = self._blocked.setdefault((case.name, k), blocked(case, k))
            calls.update(block_calls(split, reduction, k))
        self.rows.append((case.name, reduction, paired_ms(calls, repeat)))

    def time_scaling(self, progress: Callable[[str], None]) -> None:
        """Run the scaling case on a cluster of each size of the configuration."""
        config = self.scaling_config
        if config is None:
            return
        for workers in config.workers:
            progress(f"scaling case on {workers} worker(s)")
            self.scaling.append(run_scaling(config, workers))

    def time_along(self, progress: Callable[[str], None]) -> None:
        """Run the along-axis cases: numba in memory, threads, each cluster."""
        for config in self.along_configs:
            progress(f"along-axis case {config.label()}")
            self.along_numba[config] = numba_s(config)
            self.along.append(run_threads(config))
            for workers in self.along_workers:
                self.along.append(run_cluster(config, workers, "2GiB"))

    def record(self) -> dict[str, Any]:
        """The run, for the JSON record."""
        config = self.scaling_config
        return {
            "columns": self.columns,
            "scheduler": "threads",
            "chunk_size": self.chunk_size,
            "chunking": "the scatter axis whole, the other dimensions 'auto'",
            "blocks": list(self.blocks),  # and data split in so many (:mod:`.dask_blocks`)
            "layouts": {
                name: {"chunks": found.chunks, "blocks": found.blocks, "tasks": found.tasks}
                for name, found in self.layouts.items()
            },
            "rows": [
                {"case": case, "reduction": reduction, "times": dict(times)}
                for case, reduction, times in self.rows
            ],
            "along": [
                {
                    "case": vars(r.config),
                    "where": r.where,
                    "tasks": r.tasks,
                    "build_s": r.build_s,
                    "compute_s": r.compute_s,  # the first compute
                    "best_s": r.best_s,  # the best of 3, the first included
                    "cpu_s": list(r.cpu_s),  # of the first, and the least
                    "numba_s": _best(self.along_numba.get(r.config)),
                    "numba_first_s": _first(self.along_numba.get(r.config)),
                    "peak_bytes": r.peak_bytes,
                    "sum": r.total,
                }
                for r in self.along
            ],
            "scaling": None
            if config is None
            else {
                "config": {
                    "gib": config.gib,
                    "shape": [config.rows, config.columns],
                    "row_chunks": len(config.row_chunks),
                    "chunk_rows": max(config.row_chunks),
                    "per_row": config.per_row,
                    "reduction": config.reduction,
                    "memory_limit": config.memory_limit,
                    "memory_limit_bytes": _bytes(config.memory_limit),
                    "processes": config.processes,
                },
                "runs": [
                    {
                        "workers": r.workers,
                        "start_s": r.start_s,
                        "wall_s": r.wall_s,
                        "sampler_peak_bytes": r.sampler_peak,
                        "worker_peak_bytes": r.worker_peaks,
                        "restarted": r.restarted,
                        "spilled_bytes": r.spilled,
                        "checksum": r.checksum,
                        "block_checksums": r.checksums,
                        "error": r.error,
                    }
                    for r in self.scaling
                ],
            },
        }


def _bytes(size: str) -> int:
    return int(_module("dask.utils").parse_bytes(size))


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def _table(lines: list[list[str]]) -> None:
    widths = [max(len(line[k]) for line in lines) for k in range(len(lines[0]))]
    for line in lines:
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))


def _best(found: InMemory | None) -> float | None:
    return None if found is None else found.best_s


def _first(found: InMemory | None) -> float | None:
    return None if found is None else found.first_s


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return None if top is None or bottom is None else top / bottom


def print_dask(run: DaskRun) -> None:
    """Print the table of the standard cases, their chunks, then the scaling case."""
    if run.rows:
        _print_rows(run)
        print_blocks(run.rows, NUMBA, TARGET)
    if run.scaling:
        if run.rows:
            print()
        _print_scaling(run)
    if run.along:
        if run.rows or run.scaling:
            print()
        print_along(run.along, run.along_numba)


def _print_rows(run: DaskRun) -> None:
    print(
        "scatterx on dask arrays (threaded scheduler, chunks near "
        f"{run.chunk_size}, the scatter axis whole) against the numba call on the same "
        "NumPy arrays (median ms)"
    )
    lines = [["case", "red", NUMBA, PERSIST, "persist/numba", COMPUTE, "compute/numba"]]
    ratios: dict[str, list[float]] = {PERSIST: [], COMPUTE: []}
    for case, reduction, times in run.rows:
        cells = [case, reduction, _ms(times.get(NUMBA))]
        for column in (PERSIST, COMPUTE):
            ratio = _ratio(times.get(column), times.get(NUMBA))
            cells += [_ms(times.get(column)), "-" if ratio is None else f"{ratio:.2f}x"]
            if ratio is not None:
                ratios[column].append(ratio)
        lines.append(cells)
    _table(lines)
    for column, found in ratios.items():
        if found:
            target = f" (target <= {TARGET:.2f}x)" if column == PERSIST else ""
            print(
                f"{column} / numba: highest {max(found):.2f}x, "
                f"geometric mean {_geomean(found):.2f}x{target}"
            )
    print(
        "persist: the graph built and its blocks computed, kept as a Dask array; compute: "
        "that and dask's copy of the blocks into one NumPy array"
    )
    print(
        f"chunks (the axis whole; data's other dimensions by dask's 'auto' under "
        f"array.chunk-size {run.chunk_size}, indices' and updates' like data's):"
    )
    rows = [["case", "data", "indices", "updates", "tasks"]]
    for name, seen in run.layouts.items():
        cells = [f"{seen.chunks[r]} ({seen.blocks[r]})" for r in ("data", "indices", "updates")]
        rows.append([name, *cells, str(seen.tasks)])
    _table(rows)


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:.0f}"


def _print_scaling(run: DaskRun) -> None:
    config = run.scaling_config
    assert config is not None
    limit = _bytes(config.memory_limit)
    data_gib = config.rows * config.columns * 4 / 2**30
    blocks = config.row_chunks
    print(
        f"scaling: data float32 ({config.rows}, {config.columns}) = {data_gib:.2f} GiB in "
        f"{len(blocks)} blocks of up to {max(blocks)} rows "
        f"({max(blocks) * config.columns * 4 / 2**20:.0f} MiB), generated on the workers; "
        f"{config.per_row} updates a row along axis 1, {config.reduction}; a float64 sum "
        "per block back to the client"
    )
    print(
        f"workers of 1 thread, memory limit {config.memory_limit} each "
        f"({'processes' if config.processes else 'threads of this process'})"
    )
    lines = [
        [
            "workers",
            "start s",
            "wall s",
            "peak MiB, all workers (MemorySampler)",
            "peak MiB per worker (VmHWM)",
            "highest/limit",
            "spilled MiB",
            "restarted",
            "checksum",
        ]
    ]
    for r in run.scaling:
        known = [p for p in r.worker_peaks if p is not None]
        highest = f"{max(known) / limit:.0%}" if known and limit else "-"
        sampler = _mib(r.sampler_peak) + (f" of {_mib(limit * r.workers)}" if limit else "")
        lines.append(
            [
                str(r.workers),
                f"{r.start_s:.1f}",
                f"{r.wall_s:.2f}",
                sampler,
                ", ".join(_mib(p) for p in r.worker_peaks),
                highest,
                _mib(r.spilled),
                "yes" if r.restarted else "no",
                "-" if r.checksum is None else f"{r.checksum:.6e}",
            ]
        )
    _table(lines)
    for r in run.scaling:
        if r.error is not None:
            print(f"{r.workers} worker(s) failed: {r.error}")
    done = [r for r in run.scaling if r.checksums is not None]
    if len(done) > 1:
        same = all(r.checksums == done[0].checksums for r in done)
        print(f"same block checksums on every cluster: {'yes' if same else 'NO'}")
    by_workers = {r.workers: r.wall_s for r in done}
    if 1 in by_workers and 2 in by_workers:
        print(f"speed-up from 1 to 2 workers: {by_workers[1] / by_workers[2]:.2f}x")
    print(
        "peak per worker: the process's resident high-water mark, reset before the run "
        "(a restarted worker's covers its new process only); MemorySampler samples the "
        "scheduler's sum over the workers every 0.1 s; spilled: written to disk by the "
        "workers' memory managers"
    )
