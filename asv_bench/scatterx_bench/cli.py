"""``python asv_bench/bench.py``: scatterx's backends, the peers and the copy floor, side by side.

Each case and reduction in each mode of ``--mode``: a new array per call, and data updated
in place (``out=data`` and the peers' in-place calls, :data:`.cases.IN_PLACE_NOTES`).

``--library torch`` / ``--library jax``: scatterx on that library's arrays against the same
call on NumPy arrays and against the library's own scatter (:mod:`.library_table`).
``--library dask``: the lazy call on Dask arrays against the in-memory numba call, and the
scaling case on a ``distributed.LocalCluster`` (:mod:`.dask_bench`).
``--grad``: forward + backward on torch CPU tensors against torch's autograd
(:mod:`.grad_bench`).
``--onnx``: a one-node model through onnx's ReferenceEvaluator with and without
scatterx.onnx.ops, and onnxruntime, against the direct call (:mod:`.onnx_bench`).
``--nd``: scatter_nd and gather_nd against onnxruntime and torch, with each result's
distance from the exact one and issue 45's targets (:mod:`.nd_bench`).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from scatterx import backends

from . import options
from .base import (
    BENCH_EXTRA,
    FLOOR,
    MODES,
    BenchCase,
    Call,
    Mode,
    Unavailable,
    numba_compile,
)
from .cases import (
    ALL_CASE_NAMES,
    CASE_NAMES,
    CPU_PEERS,
    GATHER,
    IN_PLACE_NOTES,
    make_call,
    make_case,
)
from .dask_along import AlongConfig
from .dask_bench import DaskRun, print_dask
from .dask_scaling import ScalingConfig
from .grad_bench import grad_cases, print_grad, time_case
from .libraries import arrays_of, in_layout_of, require_library, to_library
from .library_table import LibraryRun, print_library
from .nd import ND_CASE_NAMES
from .onnx_bench import print_onnx, time_onnx_row
from .options import BLOCK_REPEAT, PROG
from .report import StandardRow, record, write_json
from .table import print_table
from .timing import CALLS, interleaved


def _backend_names(chosen: Sequence[str] | None) -> list[str]:
    available = [b.name for b in backends() if b.available]
    return [n for n in available if chosen is None or n in chosen]


class _Contestants:
    """Builds the calls of each case and reduction; says once why a contestant is skipped."""

    def __init__(self, backend_names: list[str]) -> None:
        self.names = [FLOOR, *backend_names, *CPU_PEERS]
        self._told: set[tuple[str, str]] = set()

    def calls(self, case: BenchCase, reduction: str, mode: Mode) -> dict[str, Call]:
        found = {}
        for name in self.names:
            try:
                found[name] = make_call(name, case, reduction, mode)
            except Unavailable as why:
                self.skip(name, str(why))
        return found

    def skip(self, name: str, why: str) -> None:
        if (name, why) not in self._told:
            self._told.add((name, why))
            print(f"bench: skipped {name}: {why}", file=sys.stderr, flush=True)


def _time(
    calls: dict[str, Call], args: argparse.Namespace
) -> tuple[dict[str, float], dict[str, float]]:
    """Median ms and spread of each call, contestants interleaved in rounds (:mod:`.timing`)."""
    timed = interleaved(calls, args.rounds, args.repeat)
    return (
        {name: t.median_ms for name, t in timed.items()},
        {name: t.spread for name, t in timed.items()},
    )


class _Progress:
    """``bench [k/total, s]: what ...`` on stderr, before each step."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.started = total, 0, time.perf_counter()

    def __call__(self, what: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.started
        print(
            f"bench [{self.done}/{self.total}, {elapsed:.0f} s]: {what} ...",
            file=sys.stderr,
            flush=True,
        )


def _scaling_config(args: argparse.Namespace) -> ScalingConfig | None:
    if args.dask_scaling_gib == 0:
        return None
    workers = tuple(dict.fromkeys(args.dask_workers or ScalingConfig.workers))
    return ScalingConfig(
        gib=args.dask_scaling_gib,
        memory_limit=args.dask_memory_limit,
        workers=workers,
        chunk_size=args.dask_chunk_size,
    )


Run = LibraryRun | DaskRun


def _move(run: Run, case: BenchCase) -> BenchCase:
    return run.move(case) if isinstance(run, DaskRun) else to_library(case, run.library)


def _measure(args: argparse.Namespace) -> tuple[list[StandardRow], list[str], list[Run]]:
    backend_names = _backend_names(args.backend)
    contestants = _Contestants(backend_names)
    libraries = list(dict.fromkeys(args.library or ["numpy"]))
    runs: list[Run] = []
    for library in libraries:
        try:
            require_library(library)
        except Unavailable as why:
            contestants.skip(f"library {library}", str(why))
            continue
        if library == "dask":
            dask_run = DaskRun(args.dask_chunk_size, _scaling_config(args))
            dask_run.along_configs = [AlongConfig.parse(spec) for spec in args.dask_along or ()]
            dask_run.along_workers = tuple(dict.fromkeys(args.dask_workers or (2,)))
            runs.append(dask_run)
        elif library != "numpy":
            runs.append(LibraryRun(library, backend_names))
    standard = "numpy" in libraries
    rows: list[StandardRow] = []
    columns: list[str] = [FLOOR] if standard else []
    cases = args.case or ALL_CASE_NAMES
    kinds = args.reduction or ("none", "add", "max", GATHER)
    reductions = [kind for kind in kinds if kind != GATHER]  # the libraries' tables scatter
    modes: list[Mode] = list(dict.fromkeys(args.mode or MODES))
    small_runs = [run for run in runs if isinstance(run, LibraryRun)]
    small = len(small_runs) if args.small_calls > 0 else 0
    scaling = sum(
        len(run.scaling_config.workers)
        for run in runs
        if isinstance(run, DaskRun) and run.scaling_config is not None
    )
    scaling += sum(len(run.along_configs) for run in runs if isinstance(run, DaskRun))
    rows_each = len(kinds) * standard * len(modes) + len(reductions) * len(runs)
    progress = _Progress(len(cases) * rows_each + small + scaling)
    for name in cases:
        case = make_case(name, args.size)
        for reduction in kinds if standard else ():
            for mode in modes:  # each mode's calls own their data: made, timed, dropped
                progress(f"{name} {reduction} {mode}")
                times, spreads = _time(contestants.calls(case, reduction, mode), args)
                columns += [c for c in times if c not in columns]
                rows.append(StandardRow(name, reduction, mode, times, spreads))
        for run in runs:
            with arrays_of(run.library):
                moved = _move(run, case)  # once per case
                twin = in_layout_of(case, run.library)  # the NumPy side, in the same layout
                for reduction in reductions:
                    progress(f"{name} {reduction} on {run.library}")
                    run.time_row(twin, moved, reduction, args.block_repeat, contestants.skip)
            del moved, twin
    for run in small_runs if small else ():
        progress(f"3x3 spec example on {run.library}")
        with arrays_of(run.library):
            run.time_small_call(args.small_calls, contestants.skip)
    for run in runs:
        if isinstance(run, DaskRun):
            run.time_scaling(progress)
            run.time_along(progress)
    return rows, columns, runs


def _plots(path: str, standard: bool, runs: list[Run]) -> dict[str, str]:
    """Where each table is drawn: the first at ``path``, the others beside it (run-torch.png)."""
    names = (["numpy"] if standard else []) + [run.library for run in runs]
    target = Path(path)
    return {
        name: path if k == 0 else str(target.with_stem(f"{target.stem}-{name}"))
        for k, name in enumerate(names)
    }


def _load() -> float | None:
    """The machine's load average over the last minute, where the system says."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def main(argv: list[str]) -> int:
    """Run the benchmark and print the table(s); returns the exit status."""
    parser = options.parser()
    args = parser.parse_args(argv)
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        parser.error(f"--plot needs matplotlib: {BENCH_EXTRA}")
    if args.small_calls < 0:
        parser.error("--small-calls must be 0 or more")
    if args.dask_scaling_gib < 0 or any(n < 1 for n in args.dask_workers or ()):
        parser.error("--dask-scaling-gib must be 0 or more, --dask-workers 1 or more")
    for table in ("grad", "onnx", "hand", "nd"):
        if getattr(args, table) and (args.json or args.plot or args.library):
            parser.error(f"--{table} prints its own table: it takes no --json, --plot or --library")
        if getattr(args, table) and GATHER in (args.reduction or ()):
            parser.error(f"--reduction {GATHER} is a row of the standard table, not of --{table}")
    nd_cases = [name for name in args.case or () if name in ND_CASE_NAMES]
    if args.case and (args.nd != bool(nd_cases) or 0 < len(nd_cases) < len(args.case)):
        parser.error(f"--nd takes the ND cases, and only --nd: {', '.join(ND_CASE_NAMES)}")
    args.block_repeat = BLOCK_REPEAT if args.repeat is None else args.repeat
    args.repeat = CALLS if args.repeat is None else args.repeat
    if args.repeat < 1 or args.rounds < 1:
        parser.error("--repeat and --rounds must be 1 or more")
    if args.onnx_reference_repeat < 1:
        parser.error("--onnx-reference-repeat must be 1 or more")
    with numba_compile(args.numba_compile):
        if args.onnx:
            return _onnx(args)
        if args.hand:
            from .hand_bench import run

            return run(args)
        if args.nd:
            from .nd_bench import run as run_nd

            return run_nd(args)
        return _grad(args) if args.grad else _run(args, argv)


def _run(args: argparse.Namespace, argv: list[str]) -> int:
    """The standard table, the libraries' tables, their record and charts."""
    load = [_load()]
    rows, columns, runs = _measure(args)
    load.append(_load())
    if rows:
        print_table(rows, columns)
    for run in runs:
        if rows or run is not runs[0]:
            print()
        if isinstance(run, DaskRun):
            print_dask(run)
        else:
            print_library(run)
    if None not in load:
        # Other processes on the machine take its cores: the reader should know.
        print(f"load average (1 min) at the start {load[0]:.2f}, at the end {load[1]:.2f}")
    if args.json or args.plot:
        in_place = any(row.mode == "in-place" for row in rows)
        notes = IN_PLACE_NOTES if in_place else ()
        data = record(
            rows, columns, [PROG, *argv], (args.rounds, args.repeat), list(CPU_PEERS), notes
        )
        data["machine"]["load_average_1min"] = {"start": load[0], "end": load[1]}
        data["libraries"] = {run.library: run.record() for run in runs}
        if args.json:
            write_json(args.json, data)
        if args.plot:
            from .report import plot

            paths = _plots(args.plot, bool(rows), runs)
            if rows:
                plot(paths["numpy"], data)
            for run in runs:
                if not run.rows:  # a dask run of the scaling case alone
                    continue
                plot(paths[run.library], {**data, **data["libraries"][run.library]})
                print(f"bench: drew {paths[run.library]}", file=sys.stderr)
    return 0


def _grad(args: argparse.Namespace) -> int:
    """The training table of ``--grad``."""
    load = _load()
    try:
        cases = grad_cases(args.size)
        progress = _Progress(len(cases))
        results = {}
        for case in cases:
            progress(f"{case.name} forward + backward")
            results[case.name] = time_case(case, args.block_repeat, compiler=args.grad_compiler)
    except Unavailable as why:
        print(f"bench: --grad needs torch: {why}", file=sys.stderr)
        return 1
    print_grad(results, args.grad_compiler)
    end = _load()
    if load is not None and end is not None:
        print(f"load average (1 min) at the start {load:.2f}, at the end {end:.2f}")
    return 0


def _onnx(args: argparse.Namespace) -> int:
    """The ONNX table of ``--onnx``, of the standard cases in C order."""
    rows = []
    available = _backend_names(args.backend)
    backend = "numba" if "numba" in available else "numpy"
    if args.backend:
        backend = next(name for name in args.backend if name in available)
    cases = args.case or CASE_NAMES
    reductions = args.reduction or ("none", "add", "max")
    progress = _Progress(len(cases) * len(reductions))
    try:
        for name in cases:
            case = make_case(name, args.size)
            for reduction in reductions:
                progress(f"{name} {reduction} through onnx")
                rows.append(
                    time_onnx_row(
                        case,
                        reduction,
                        backend,
                        (args.rounds, args.repeat),
                        args.onnx_reference_repeat,
                    )
                )
    except Unavailable as why:
        print(f"bench: --onnx needs onnx: {why}", file=sys.stderr)
        return 1
    print_onnx(rows, backend)
    return 0
