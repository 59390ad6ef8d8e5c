"""``python -m scatterx bench``: scatterx's backends, the peers and the copy floor, side by side."""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import time
from collections.abc import Sequence

from scatterx import backends

from .cases import (
    BENCH_EXTRA,
    CASE_NAMES,
    CPU_PEERS,
    FLOOR,
    REDUCTIONS,
    BenchCase,
    Call,
    Unavailable,
    make_call,
    make_case,
    median_ms,
)
from .report import Row, record, write_json


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m scatterx bench",
        description="Median milliseconds of every available backend, the peers and the "
        "copy floor on performance.md's standard cases, measured in one process. "
        f"Peers that are not installed are skipped, with what to install ({BENCH_EXTRA}).",
    )
    parser.add_argument("--case", action="append", choices=CASE_NAMES, help="repeatable")
    parser.add_argument(
        "--reduction",
        action="append",
        choices=REDUCTIONS,
        help="repeatable (default: none, add, max)",
    )
    parser.add_argument("--size", type=float, default=1.0, help="scale of the shapes")
    parser.add_argument("--repeat", type=int, default=7, help="timed calls per contestant")
    parser.add_argument("--backend", action="append", help="backends to time (default: all)")
    parser.add_argument(
        "--json", metavar="FILE", help="also write the run (times, command, machine)"
    )
    parser.add_argument(
        "--plot", metavar="FILE.png", help=f"also draw the times (needs matplotlib: {BENCH_EXTRA})"
    )
    return parser


def _backend_names(chosen: Sequence[str] | None) -> list[str]:
    available = [b.name for b in backends() if b.available]
    return [n for n in available if chosen is None or n in chosen]


class _Contestants:
    """Builds the calls of each case and reduction; says once why a contestant is skipped."""

    def __init__(self, backend_names: list[str]) -> None:
        self.names = [FLOOR, *backend_names, *CPU_PEERS]
        self._told: set[tuple[str, str]] = set()

    def calls(self, case: BenchCase, reduction: str) -> dict[str, Call]:
        found = {}
        for name in self.names:
            try:
                found[name] = make_call(name, case, reduction)
            except Unavailable as why:
                self._skip(name, str(why))
        return found

    def _skip(self, name: str, why: str) -> None:
        if (name, why) not in self._told:
            self._told.add((name, why))
            print(f"bench: skipped {name}: {why}", file=sys.stderr, flush=True)


def _time(calls: dict[str, Call], repeat: int) -> dict[str, float]:
    """Median ms of each call, contestants timed in blocks, not interleaved.

    The thread pools of torch, onnxruntime and numba keep spinning for a while after a
    call; on a 2-core machine that steals the next contestant's cores (performance.md).
    """
    return {name: median_ms(call, repeat) for name, call in calls.items()}


def _speedup(row: dict[str, float]) -> float | None:
    peers = [row[p] for p in CPU_PEERS if p in row]
    if "numba" not in row or not peers:
        return None
    return min(peers) / row["numba"]


def _print_table(rows: list[Row], columns: list[str]) -> None:
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


def _measure(args: argparse.Namespace) -> tuple[list[Row], list[str]]:
    contestants = _Contestants(_backend_names(args.backend))
    rows: list[Row] = []
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
            times = _time(contestants.calls(case, reduction), args.repeat)
            columns += [c for c in times if c not in columns]
            rows.append((name, reduction, times))
    return rows, columns


def main(argv: list[str]) -> int:
    """Run the benchmark and print the table; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        parser.error(f"--plot needs matplotlib: {BENCH_EXTRA}")
    rows, columns = _measure(args)
    _print_table(rows, columns)
    if args.json or args.plot:
        data = record(rows, columns, argv, args.repeat, list(CPU_PEERS))
        if args.json:
            write_json(args.json, data)
        if args.plot:
            from .report import plot

            plot(args.plot, data)
    return 0
