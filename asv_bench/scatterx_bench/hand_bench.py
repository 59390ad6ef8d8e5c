"""``python asv_bench/bench.py --hand``: scatterx's numba backend against the hand-written loop
of each cell (:mod:`.hand`) and against the fastest peer, interleaved in rounds.

Before a cell is timed, its hand loop's result is compared with scatterx's bit for bit (in
place: each updating its own copy of data once, from the same values; a loop that gives
another answer is no comparison), and an in-place loop must return the caller's array.

Each cell also has its memory floor (:mod:`.floor`): the fewest bytes any implementation
must move, at the best bandwidth measured here. The fastest peer's time over it is the
most that any implementation could lead that peer by on this machine.
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from scatterx import scatter_elements

from .base import BenchCase, Call, Mode, Unavailable
from .cases import ALL_CASE_NAMES, CPU_PEERS, in_place_case, make_call, make_case
from .floor import bandwidth, floor_bytes, last_level_cache
from .hand import REDUCTIONS, HandLoop, hand_loop
from .timing import Timed, cell, interleaved, legend

#: A cell whose scatterx time is over this many times its hand loop's is marked.
HAND_LIMIT = 1.2


@dataclass(frozen=True)
class HandRow:
    """One cell: scatterx (numba), its hand loop, and the peers, each timed in rounds."""

    case: str
    reduction: str
    mode: Mode
    numba: Timed
    hand: Timed
    peers: dict[str, Timed]
    #: The memory floor's ms (:mod:`.floor`).
    floor_ms: float

    @property
    def fastest(self) -> str | None:
        return min(self.peers, key=lambda p: self.peers[p].median_ms) if self.peers else None

    @property
    def over_hand(self) -> float:
        """scatterx's time over the hand loop's: above 1, scatterx is slower."""
        return self.numba.median_ms / self.hand.median_ms

    @property
    def speedup(self) -> float | None:
        """The fastest peer's time over scatterx's: above 1, scatterx is faster."""
        fastest = self.fastest
        return None if fastest is None else self.peers[fastest].median_ms / self.numba.median_ms

    @property
    def ceiling(self) -> float | None:
        """The fastest peer's time over the floor: the most any implementation could lead
        it by here."""
        fastest = self.fastest
        return None if fastest is None else self.peers[fastest].median_ms / self.floor_ms


def _bits(array: Any) -> Any:
    array = np.asarray(array)
    return array.view(np.dtype(f"u{array.dtype.itemsize}"))


def check_same_bits(case: BenchCase, reduction: str, mode: Mode, loop: HandLoop) -> None:
    """Raise AssertionError unless ``loop`` gives scatterx's bits on ``case`` in ``mode``."""
    got: Any
    own = case if mode == "new" else in_place_case(case, reduction)
    out = None if mode == "new" else own.data
    expected = scatter_elements(
        *own.arrays, axis=case.axis, reduction=reduction, backend="numba", out=out
    )
    if mode == "new":
        got = loop(case.data, case.indices, case.updates)
        if np.shares_memory(got, case.data):
            msg = f"{case.name} {reduction}: the new-mode hand loop returned data's memory"
            raise AssertionError(msg)
    else:
        theirs = in_place_case(case, reduction)
        returned = loop(theirs.data, theirs.indices, theirs.updates)
        if returned is not theirs.data and returned.base is not theirs.data:
            msg = f"{case.name} {reduction}: the in-place hand loop did not return data"
            raise AssertionError(msg)
        got = theirs.data
    if got.shape != expected.shape or not np.array_equal(_bits(got), _bits(expected)):
        msg = f"{case.name} {reduction} {mode}: the hand loop's bits differ from scatterx's"
        raise AssertionError(msg)


def _hand_call(case: BenchCase, reduction: str, mode: Mode, loop: HandLoop) -> Call:
    own = in_place_case(case, reduction) if mode == "in-place" else case
    data, indices, updates = own.arrays
    return lambda: loop(data, indices, updates)


def time_cell(
    case: BenchCase,
    reduction: str,
    mode: Mode,
    peers: list[str],
    timing: tuple[int, int],
    floor_ms: float,
) -> HandRow:
    """Check the hand loop's bits, then time numba, the hand loop and ``peers`` interleaved
    (``timing``: rounds and calls per round); ``floor_ms``: the cell's memory floor."""
    loop = hand_loop(case.name, reduction, mode)
    check_same_bits(case, reduction, mode, loop)
    calls: dict[str, Call] = {
        "numba": make_call("numba", case, reduction, mode),
        "hand": _hand_call(case, reduction, mode, loop),
    }
    for peer in peers:
        try:
            calls[peer] = make_call(peer, case, reduction, mode)
        except Unavailable:
            continue
    timed = interleaved(calls, *timing)
    others = {name: t for name, t in timed.items() if name not in ("numba", "hand")}
    return HandRow(case.name, reduction, mode, timed["numba"], timed["hand"], others, floor_ms)


def print_rows(rows: list[HandRow]) -> None:
    """The table: a row per cell; per mode the geometric means and the cells over the limit."""
    head = [
        "case",
        "red",
        "mode",
        "numba ms",
        "hand ms",
        "numba/hand",
        "fastest peer ms",
        "peer/numba",
        "floor ms",
        "numba/floor",
        "peer/floor",
    ]
    lines = [head]
    for row in rows:
        fastest, speedup, ceiling = row.fastest, row.speedup, row.ceiling
        peer = "-" if fastest is None else f"{fastest} {cell(*row.peers[fastest][:2])}"
        mark = "*" if row.over_hand > HAND_LIMIT else ""
        lines.append(
            [
                row.case,
                row.reduction,
                row.mode,
                cell(*row.numba[:2]),
                cell(*row.hand[:2]),
                f"{row.over_hand:.2f}{mark}",
                peer,
                "-" if speedup is None else f"{speedup:.2f}x",
                f"{row.floor_ms:.2f}",
                f"{row.numba.median_ms / row.floor_ms:.2f}",
                "-" if ceiling is None else f"{ceiling:.2f}x",
            ]
        )
    widths = [max(len(line[k]) for line in lines) for k in range(len(head))]
    for line in lines:
        print("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))
    for mode in dict.fromkeys(row.mode for row in rows):
        mine = [row for row in rows if row.mode == mode]
        speedups = [row.speedup for row in mine if row.speedup is not None]
        summary = f"{mode}: numba/hand geometric mean {_geometric(r.over_hand for r in mine):.2f}"
        if speedups:
            summary += (
                f", peer/numba geometric mean {_geometric(speedups):.2f}x, lowest "
                f"{min(speedups):.2f}x; peer/floor geometric mean "
                f"{_geometric(r.ceiling for r in mine if r.ceiling is not None):.2f}x"
            )
        print(summary)
    print(f"- *: numba over {HAND_LIMIT}x its hand loop; hand loops: scatterx_bench.hand")
    print(
        "- floor: the fewest bytes any implementation moves at the best parallel read or copy "
        "rate here (scatterx_bench.floor); peer/floor: the most any implementation could lead "
        "the fastest peer by"
    )
    print(f"- {legend()}")


def _geometric(values: Any) -> float:
    logs = [math.log(v) for v in values]
    return math.exp(sum(logs) / len(logs)) if logs else math.nan


def run(args: argparse.Namespace) -> int:
    """The ``--hand`` table of the cases, reductions and modes that ``args`` names."""
    cases = args.case or ALL_CASE_NAMES
    reductions = args.reduction or REDUCTIONS
    modes: list[Mode] = list(dict.fromkeys(args.mode or ("new", "in-place")))
    peers = list(dict.fromkeys(args.peer or CPU_PEERS))
    start = os.getloadavg()[0]
    rate, cache = bandwidth(), last_level_cache()
    print(f"bench --hand: {rate / 1e9:.1f} GB/s at best, a last-level cache of {cache >> 20} MiB")
    rows = []
    for name in cases:
        case = make_case(name, args.size)
        floors = {mode: floor_bytes(case, mode, cache) / rate * 1e3 for mode in modes}
        for reduction in reductions:
            for mode in modes:
                print(f"bench --hand: {name} {reduction} {mode} ...", flush=True)
                timing = (args.rounds, args.repeat)
                rows.append(time_cell(case, reduction, mode, peers, timing, floors[mode]))
    print_rows(rows)
    print(f"load average (1 min) at the start {start:.2f}, at the end {os.getloadavg()[0]:.2f}")
    return 0
