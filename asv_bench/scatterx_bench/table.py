"""The standard table of ``python asv_bench/bench.py``: a row per case, reduction and mode,
numba against the fastest peer, the ratios summed up per mode."""

from __future__ import annotations

import math
import textwrap

from .cases import CPU_PEERS, IN_PLACE_NOTES
from .report import StandardRow
from .timing import SPREAD_LIMIT, cell, legend

#: Issue 46: an in-place call at most this many times its new-array call on the same case.
IN_PLACE_LIMIT = 1.05


def fastest_peer(row: dict[str, float]) -> str | None:
    """The peer with the least time in the row, where one ran."""
    peers = [p for p in CPU_PEERS if p in row]
    return min(peers, key=row.__getitem__) if peers else None


def speedup(row: dict[str, float]) -> float | None:
    """How many times faster numba is than the fastest peer of the row, where both ran."""
    peer = fastest_peer(row)
    if "numba" not in row or peer is None:
        return None
    return row[peer] / row["numba"]


def noisy(row: StandardRow) -> bool:
    """Whether numba's or the fastest peer's spread is over the limit: no verdict."""
    peer = fastest_peer(row.times)
    if "numba" not in row.times or peer is None:
        return False
    return any(row.spreads.get(name, 0.0) > SPREAD_LIMIT for name in ("numba", peer))


def in_place_over_new(row: StandardRow, rows: list[StandardRow]) -> float | None:
    """numba's in-place time over its new-array time on the same case and row kind
    (issue 46: at most :data:`IN_PLACE_LIMIT`); None for a new-array row or where either
    is missing."""
    if row.mode != "in-place" or "numba" not in row.times:
        return None
    for other in rows:
        same = (other.case, other.reduction) == (row.case, row.reduction)
        if same and other.mode == "new" and "numba" in other.times:
            return row.times["numba"] / other.times["numba"]
    return None


def verdict(row: StandardRow, rows: list[StandardRow]) -> str:
    """``"1.23x torch"``: numba against the row's fastest peer, named; ``!`` where a spread
    forbids a verdict; ``<`` under 1.0x."""
    ratio, peer = speedup(row.times), fastest_peer(row.times)
    if ratio is None or peer is None:
        return "-"
    marks = ("!" if noisy(row) else "") + ("<" if ratio < 1.0 else "")
    return f"{ratio:.2f}x {peer}{marks}"


def print_table(rows: list[StandardRow], columns: list[str]) -> None:
    """The table, a row per case, reduction and mode; the ratios summed up per mode."""
    head = ["case", "red", "mode", *columns, "numba vs fastest peer", "in place/new"]
    lines = [head]
    for row in rows:
        cells = [cell(row.times[c], row.spreads.get(c)) if c in row.times else "-" for c in columns]
        over = in_place_over_new(row, rows)
        shown = "-" if over is None else f"{over:.2f}" + ("<" if over <= IN_PLACE_LIMIT else ">")
        lines.append([row.case, row.reduction, row.mode, *cells, verdict(row, rows), shown])
    widths = [max(len(line[k]) for line in lines) for k in range(len(head))]
    for line in lines:
        print("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))
    print("median ms" + "".join(f"; {line}" for line in summaries(rows)))
    notes = [
        "numba vs fastest peer: that peer's median over numba's (above 1.0, numba is faster; "
        "<: under 1.0x, the target of every cell)"
    ]
    if any(row.mode == "in-place" for row in rows):
        notes[0] += (
            "; in place/new: numba's in-place median over its new-array one on the same row "
            f"(target at most {IN_PLACE_LIMIT:.2f}: <, met; >, over)"
        )
        notes += IN_PLACE_NOTES
    if any(row.spreads for row in rows):
        notes.append(legend())
    for note in notes:
        print(textwrap.fill(note, 100, initial_indent="- ", subsequent_indent="  "))


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
