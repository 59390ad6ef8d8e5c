"""``python -m scatterx bench``: scatterx's backends, the peers and the copy floor, side by side."""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from ._bench_peers import CASE_NAMES, PEERS, BenchCase, Call, copy_floor, make_case

FLOOR = "copy-floor"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m scatterx bench",
        description="Median milliseconds of every available backend, the peers and the "
        "copy floor on performance.md's standard cases, measured in one process.",
    )
    parser.add_argument("--case", action="append", choices=CASE_NAMES, help="repeatable")
    parser.add_argument(
        "--reduction",
        action="append",
        choices=("none", "add", "mul", "max", "min"),
        help="repeatable (default: none, add, max)",
    )
    parser.add_argument("--size", type=float, default=1.0, help="scale of the shapes")
    parser.add_argument("--repeat", type=int, default=7, help="timed calls per contestant")
    parser.add_argument("--backend", action="append", help="backends to time (default: all)")
    parser.add_argument(
        "--json", metavar="FILE", help="also write the run (times, command, machine)"
    )
    parser.add_argument(
        "--plot", metavar="FILE.png", help="also draw the times (needs matplotlib: scatterx[bench])"
    )
    return parser


def _backend_call(name: str, case: BenchCase, reduction: str) -> Call | None:
    import scatterx

    args = (case.data, case.indices, case.updates)
    kwargs: dict[str, Any] = {"axis": case.axis, "reduction": reduction, "backend": name}
    try:
        scatterx.scatter_elements(*args, **kwargs)  # compiles, warms caches; never timed
    except scatterx.BackendError:
        return None
    return lambda: scatterx.scatter_elements(*args, **kwargs)


def _backend_names(chosen: Sequence[str] | None) -> list[str]:
    import scatterx

    available = [b.name for b in scatterx.backends() if b.available]
    return [n for n in available if chosen is None or n in chosen]


def _contestants(case: BenchCase, reduction: str, backends: list[str]) -> dict[str, Call]:
    calls: dict[str, Call | None] = {FLOOR: copy_floor(case)}
    for name in backends:
        calls[name] = _backend_call(name, case, reduction)
    for name, build in PEERS.items():
        peer = calls[name] = build(case, reduction)
        if peer is not None:
            peer()  # the first run of a session allocates; never timed
    return {k: v for k, v in calls.items() if v is not None}


def _time(calls: dict[str, Call], repeat: int) -> dict[str, float]:
    """Median ms of each call: one untimed call, then ``repeat`` timed calls in a row.

    Contestants are timed in blocks, not interleaved: the thread pools of torch,
    onnxruntime and numba keep spinning for a while after a call, and on a 2-core machine
    that steals the next contestant's cores (measured: numba's 1d-histogram max took
    7.0 ms right after torch and 2.9 ms right after itself; torch moved the same way).
    """
    medians: dict[str, float] = {}
    for name, call in calls.items():
        call()
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            call()
            samples.append((time.perf_counter() - start) * 1e3)
        medians[name] = statistics.median(samples)
    return medians


def _speedup(row: dict[str, float]) -> float | None:
    peers = [row[p] for p in PEERS if p in row]
    if "numba" not in row or not peers:
        return None
    return min(peers) / row["numba"]


def _print_table(rows: list[tuple[str, str, dict[str, float]]], columns: list[str]) -> None:
    head = ["case", "red", *columns, "numba vs fastest peer"]
    lines = [head]
    for case, reduction, times in rows:
        speedup = _speedup(times)
        cells = [f"{times[c]:.2f}" if c in times else "-" for c in columns]
        lines.append([case, reduction, *cells, "-" if speedup is None else f"{speedup:.2f}x"])
    widths = [max(len(line[k]) for line in lines) for k in range(len(head))]
    for line in lines:
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))
    speedups = [s for _, _, t in rows if (s := _speedup(t)) is not None]
    if speedups:
        geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
        print(
            f"median ms; numba vs fastest peer: geometric mean {geomean:.2f}x, "
            f"lowest {min(speedups):.2f}x"
        )


def main(argv: list[str]) -> int:
    """Run the benchmark and print the table; returns the exit status."""
    args = _parser().parse_args(argv)
    backends = _backend_names(args.backend)
    rows: list[tuple[str, str, dict[str, float]]] = []
    columns: list[str] = [FLOOR]
    cases = args.case or CASE_NAMES
    reductions = args.reduction or ("none", "add", "max")
    total, started = len(cases) * len(reductions), time.perf_counter()
    for name in cases:
        case = make_case(name, args.size)
        for reduction in reductions:
            elapsed = time.perf_counter() - started
            print(
                f"bench [{len(rows) + 1}/{total}, {elapsed:.0f} s]: {name} {reduction} ...",
                file=sys.stderr,
                flush=True,
            )
            times = _time(_contestants(case, reduction, backends), args.repeat)
            columns += [c for c in times if c not in columns]
            rows.append((name, reduction, times))
    _print_table(rows, columns)
    if args.json or args.plot:
        from . import _bench_report

        data = _bench_report.record(rows, columns, argv, args.repeat, list(PEERS))
        if args.json:
            _bench_report.write_json(args.json, data)
        if args.plot:
            _bench_report.plot(args.plot, data)
    return 0
