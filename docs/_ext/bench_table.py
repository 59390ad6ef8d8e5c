"""Sphinx extension: the performance table, made from ``_static/bench.json`` at build time.

``python asv_bench/bench.py --json docs/_static/bench.json`` records a run; this writes
``generated/bench_table.md`` from it (the command, the machine, the versions and the
table), which ``performance.md`` includes. The page then shows exactly what was measured.
A row without a mode (a record made before ``--mode``) is a new-array call; the mode column
and the notes appear where a run has in-place rows.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

SOURCE = Path("_static") / "bench.json"
TARGET = Path("generated") / "bench_table.md"


def _fastest(times: dict[str, float], peers: list[str]) -> str | None:
    """The peer of this row with the least time, where one ran."""
    measured = [p for p in peers if p in times]
    return min(measured, key=times.__getitem__) if measured and "numba" in times else None


def _speedup(times: dict[str, float], peers: list[str]) -> float | None:
    """How many times faster numba is than the fastest peer of this row."""
    peer = _fastest(times, peers)
    return None if peer is None else times[peer] / times["numba"]


def _in_place_over_new(row: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """numba's in-place time over its new-array time on the same case and row."""
    if _mode(row) != "in-place" or "numba" not in row["times"]:
        return "-"
    for other in rows:
        same = (other["case"], other["reduction"]) == (row["case"], row["reduction"])
        if same and _mode(other) == "new" and "numba" in other["times"]:
            return f"{row['times']['numba'] / other['times']['numba']:.2f}"
    return "-"


def _mode(row: dict[str, Any]) -> str:
    return str(row.get("mode", "new"))


def bench_table(data: dict[str, Any]) -> str:
    """The Markdown of the run recorded in ``data``."""
    machine, columns, peers = data["machine"], data["columns"], data.get("peers", [])
    with_modes = any(_mode(row) != "new" for row in data["rows"])
    mode_head, mode_rule = ("mode | ", "---|") if with_modes else ("", "")
    over_head, over_rule = (" in place/new |", "---:|") if with_modes else ("", "")
    versions = ", ".join(f"{name} {version}" for name, version in data["versions"].items())
    lines = [
        "```bash",
        data["command"],
        "```",
        "",
        f"Machine: {machine['cpus']} CPUs (`nproc`), {machine['cpu_model']} (`lscpu`'s",
        f"Model name), {machine['platform']}, Python {machine['python']}. Versions: {versions}.",
        f"Each cell: {data['statistic']}, in {data['unit']}.",
        "",
        f"| case | reduction | {mode_head}"
        + " | ".join(columns)
        + f" | numba vs fastest peer |{over_head}",
        f"|---|---|{mode_rule}" + "---:|" * (len(columns) + 1) + over_rule,
    ]
    ratios: dict[str, list[float]] = {}
    for row in data["rows"]:
        times = row["times"]
        cells = [f"{times[c]:.2f}" if c in times else "-" for c in columns]
        speedup = _speedup(times, peers)
        if speedup is not None:
            ratios.setdefault(_mode(row), []).append(speedup)
        mode = f"{_mode(row)} | " if with_modes else ""
        ratio = "-" if speedup is None else f"{speedup:.2f}x {_fastest(times, peers)}"
        over = f" {_in_place_over_new(row, data['rows'])} |" if with_modes else ""
        lines.append(
            f"| {row['case']} | {row['reduction']} | {mode}"
            + " | ".join(cells)
            + f" | {ratio} |{over}"
        )
    summaries = [
        f"{f'{mode}: ' if with_modes else ''}geometric mean {_geomean(found):.2f}x, "
        f"lowest {min(found):.2f}x"
        for mode, found in ratios.items()
    ]
    if summaries:
        lines += [
            "",
            f"numba against the fastest peer of each row: {'; '.join(summaries)} "
            f"(peers: {', '.join(peers)}).",
        ]
    notes = data.get("notes", []) if with_modes else []
    if notes:
        lines += ["", *(f"- {note}." for note in notes)]
    return "\n".join(lines) + "\n"


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _write(app: Any) -> None:
    source = Path(app.srcdir) / SOURCE
    target = Path(app.srcdir) / TARGET
    text = bench_table(json.loads(source.read_text(encoding="utf-8")))
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    """Register the hook with Sphinx."""
    app.connect("builder-inited", _write)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
