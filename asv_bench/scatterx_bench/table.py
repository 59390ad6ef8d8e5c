"""The standard table of ``python asv_bench/bench.py``: a row per case, reduction and mode,
numba against the fastest peer, the ratios summed up per mode."""

from __future__ import annotations

import math
import textwrap

from .cases import CPU_PEERS, IN_PLACE_NOTES
from .report import StandardRow
from .timing import SPREAD_LIMIT, cell, legend


def speedup(row: dict[str, float]) -> float | None:
    """How many times faster numba is than the fastest peer of the row, where both ran."""
    peers = [row[p] for p in CPU_PEERS if p in row]
    if "numba" not in row or not peers:
        return None
    return min(peers) / row["numba"]


def noisy(row: StandardRow) -> bool:
    """Whether numba's or the fastest peer's spread is over the limit: no verdict."""
    peers = [p for p in CPU_PEERS if p in row.times]
    if "numba" not in row.times or not peers:
        return False
    fastest = min(peers, key=row.times.__getitem__)
    return any(row.spreads.get(name, 0.0) > SPREAD_LIMIT for name in ("numba", fastest))


def print_table(rows: list[StandardRow], columns: list[str]) -> None:
    """The table, a row per case, reduction and mode; the ratios summed up per mode."""
    head = ["case", "red", "mode", *columns, "numba vs fastest peer"]
    lines = [head]
    for row in rows:
        ratio = speedup(row.times)
        cells = [cell(row.times[c], row.spreads.get(c)) if c in row.times else "-" for c in columns]
        shown = "-" if ratio is None else f"{ratio:.2f}x" + ("!" if noisy(row) else "")
        lines.append([row.case, row.reduction, row.mode, *cells, shown])
    widths = [max(len(line[k]) for line in lines) for k in range(len(head))]
    for line in lines:
        print("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))
    print("median ms" + "".join(f"; {line}" for line in summaries(rows)))
    if any(row.mode == "in-place" for row in rows):
        for note in IN_PLACE_NOTES:
            print(textwrap.fill(note, 100, initial_indent="- ", subsequent_indent="  "))
    if any(row.spreads for row in rows):
        print(textwrap.fill(legend(), 100, initial_indent="- ", subsequent_indent="  "))


def summaries(rows: list[StandardRow]) -> list[str]:
    """numba against the fastest peer, per mode: the geometric mean and the lowest ratio."""
    found: dict[str, list[float]] = {}
    for row in rows:
        ratio = speedup(row.times)
        if ratio is not None:
            found.setdefault(row.mode, []).append(ratio)
    return [
        f"numba vs fastest peer, {mode}: geometric mean "
        f"{math.exp(sum(math.log(s) for s in ratios) / len(ratios)):.2f}x, "
        f"lowest {min(ratios):.2f}x"
        for mode, ratios in found.items()
    ]
