"""The table of ``python asv_bench/bench.py --library torch|jax``: one library against NumPy.

For each standard case and reduction, each backend's scatterx call on the library's arrays
and the same call on NumPy arrays, timed in turns (:func:`.libraries.paired_ms`), their
ratio, the library's own scatter and its ratio to the fastest scatterx; then the 3x3 call's
microseconds on both kinds of arrays and their difference.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .base import BenchCase, Call, Unavailable
from .cases import median_ms, spec_example
from .libraries import (
    DONATED,
    DONATED_NOTE,
    PEER,
    PEER_NOTE,
    donated_call,
    interleaved_us,
    median_difference,
    on,
    paired_ms,
    peer_call,
    scatterx_call,
    small_calls,
)
from .report import Row

Skip = Callable[[str, str], None]
SMALL_ROUNDS = 9  # as tools/small_call_ratio.py


@dataclass
class LibraryRun:
    """One library's measurements: rows of median ms, and the 3x3 call's microseconds."""

    library: str
    backends: list[str]
    rows: list[Row] = field(default_factory=list)
    small_us: dict[str, list[float]] = field(default_factory=dict)
    small_number: int = 0

    @property
    def peer(self) -> str | None:
        return PEER.get(self.library)

    @property
    def columns(self) -> list[str]:
        """The timed columns, in the table's order (the ratios are derived)."""
        found = {name for _, _, times in self.rows for name in times}
        mine = (self.library, DONATED, "numpy")
        names = [on(b, library) for b in self.backends for library in mine]
        names += [self.peer] if self.peer else []
        return [name for name in names if name in found]

    def time_row(
        self, case: BenchCase, moved: BenchCase, reduction: str, repeat: int, skip: Skip
    ) -> None:
        """Time every backend on the library's arrays and NumPy's, then the peer; keep the row.

        ``case`` holds NumPy arrays, ``moved`` the same in the library
        (:func:`.libraries.to_library`, made once per case).
        """
        times: dict[str, float] = {}
        for backend in self.backends:
            try:
                pair = {on(backend, self.library): scatterx_call(backend, moved, reduction)}
                pair[on(backend, "numpy")] = scatterx_call(backend, case, reduction)
            except Unavailable as why:
                skip(on(backend, self.library), str(why))
                continue
            if self.library == "jax":
                try:
                    pair[on(backend, DONATED)] = donated_call(backend, moved, reduction)
                except Unavailable as why:
                    skip(on(backend, DONATED), str(why))
            times.update(paired_ms(pair, repeat))
        if self.peer is not None:
            try:
                peer = peer_call(self.library, moved, reduction)
            except Unavailable as why:
                skip(self.peer, str(why))
            else:
                times[self.peer] = median_ms(peer, repeat)
        self.rows.append((case.name, reduction, times))

    def time_small_call(self, number: int, skip: Skip) -> None:
        """Microseconds of the 3x3 call on NumPy's and the library's arrays, per backend."""
        calls: dict[str, Call]
        calls, skipped = small_calls(self.library, spec_example(), self.backends)
        for name, why in skipped:
            skip(f"3x3 {name}", why)
        self.small_us = interleaved_us(calls, number, SMALL_ROUNDS)
        self.small_number = number

    def record(self) -> dict[str, Any]:
        """The run, for the JSON record."""
        small = {name: statistics.median(us) for name, us in self.small_us.items()}
        return {
            "columns": self.columns,
            "peer": self.peer,
            "peer_note": PEER_NOTE.get(self.library),
            "rows": [
                {"case": case, "reduction": reduction, "times": dict(times)}
                for case, reduction, times in self.rows
            ],
            "spec_example_us": small,
            "spec_example_statistic": f"median of {SMALL_ROUNDS} rounds, each the mean of "
            f"up to {self.small_number} calls (about 50 ms of calls where fewer); the calls "
            "take turns within a round",
        }


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return None if top is None or bottom is None else top / bottom


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _table(lines: list[list[str]]) -> None:
    widths = [max(len(line[k]) for line in lines) for k in range(len(lines[0]))]
    for line in lines:
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))


#: performance.md's targets, library / numpy: torch within 1.1x; JAX under ``jax.jit``
#: within 1.5x without donation, 1.2x with ``data`` donated.
TARGETS = {"torch": 1.10, "jax": 1.50, DONATED: 1.20}
#: The 3x3 call's target, microseconds over the same call on NumPy arrays.
SMALL_TARGETS = {"torch": 5.0, "jax": 20.0}


def print_library(run: LibraryRun) -> None:
    """Print the run's table, its summary against performance.md's targets, the 3x3 call."""
    lib, peer = run.library, run.peer
    kinds = [k for k in (lib, DONATED) if any(on(b, k) in run.columns for b in run.backends)]
    pairs = [(b, k) for b in run.backends for k in kinds if on(b, k) in run.columns]
    head = ["case", "red"]
    for backend, kind in pairs:
        head += [on(backend, kind), on(backend, "numpy"), f"{kind}/numpy"]
    head += [peer, "peer/fastest"] if peer else []
    lines = [head]
    ratios: dict[tuple[str, str], list[float]] = {pair: [] for pair in pairs}
    peer_ratios: list[float] = []
    for case, reduction, times in run.rows:
        cells = [case, reduction]
        for backend, kind in pairs:
            mine, numpy_ms = times.get(on(backend, kind)), times.get(on(backend, "numpy"))
            ratio = _ratio(mine, numpy_ms)
            cells += [_ms(mine), _ms(numpy_ms), _x(ratio)]
            if ratio is not None:
                ratios[backend, kind].append(ratio)
        if peer:
            versus = _ratio(times.get(peer), _fastest(times, run.backends, lib))
            cells += [_ms(times.get(peer)), _x(versus)]
            if versus is not None:
                peer_ratios.append(versus)
        lines.append(cells)
    print(f"scatterx on {lib} arrays against the same call on NumPy arrays (median ms)")
    _table(lines)
    _print_summary(run, ratios, peer_ratios)
    if run.small_us:
        _print_small(run)


def _fastest(times: dict[str, float], backends: list[str], lib: str) -> float | None:
    """The fastest scatterx call on the library's arrays (without donation) of a row."""
    return min((times[on(b, lib)] for b in backends if on(b, lib) in times), default=None)


def _print_summary(
    run: LibraryRun, ratios: dict[tuple[str, str], list[float]], peer_ratios: list[float]
) -> None:
    lib, peer = run.library, run.peer
    for (backend, kind), found in ratios.items():
        if found:
            print(
                f"{backend}: {kind}/numpy highest {max(found):.2f}x, "
                f"geometric mean {_geomean(found):.2f}x (target <= {TARGETS[kind]:.2f}x)"
            )
    if peer_ratios:
        print(
            f"{peer} / fastest scatterx on {lib}: lowest {min(peer_ratios):.2f}x, "
            f"geometric mean {_geomean(peer_ratios):.2f}x (target >= 1.5x)"
        )
    if peer:
        print(f"{peer}: {PEER_NOTE[lib]}")
    if any(kind == DONATED for _, kind in ratios):
        print(f"{DONATED}: {DONATED_NOTE}")


def _print_small(run: LibraryRun) -> None:
    lib, us = run.library, run.small_us
    print(
        f"\n3x3 spec example (none) on {lib}: median microseconds per call of {SMALL_ROUNDS} "
        f"rounds x up to {run.small_number} calls (50 ms of calls where fewer), the calls "
        "taking turns"
    )
    lines = [["backend", "on numpy", f"on {lib}", f"{lib} - numpy"]]
    for name in dict.fromkeys(key.rpartition(" on ")[0] for key in us if " on " in key):
        mine, numpy_us = us.get(on(name, lib)), us.get(on(name, "numpy"))
        if mine is None or numpy_us is None:
            continue
        difference = median_difference(numpy_us, mine)
        cells = [f"{statistics.median(numpy_us):.2f}", f"{statistics.median(mine):.2f}"]
        lines.append([name, *cells, f"{difference:+.2f}"])
    if run.peer and run.peer in us:
        lines.append([run.peer, "-", f"{statistics.median(us[run.peer]):.2f}", "-"])
    _table(lines)
    target = SMALL_TARGETS.get(lib, 5.0)
    print(f"target: scatterx on {lib} at most +{target:g} us over the same call on numpy")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"
