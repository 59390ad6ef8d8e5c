"""Sphinx extension: the performance table, made from ``_static/bench.json`` at build time.

``python -m scatterx bench --json docs/_static/bench.json`` records a run; this writes
``generated/bench_table.md`` from it (the command, the machine, the versions and the
table), which ``performance.md`` includes. The page then shows exactly what was measured.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

SOURCE = Path("_static") / "bench.json"
TARGET = Path("generated") / "bench_table.md"


def _speedup(times: dict[str, float], peers: list[str]) -> str:
    """How many times faster numba is than the fastest peer of this row."""
    measured = [times[p] for p in peers if p in times]
    if "numba" not in times or not measured:
        return "-"
    return f"{min(measured) / times['numba']:.2f}x"


def bench_table(data: dict[str, Any]) -> str:
    """The Markdown of the run recorded in ``data``."""
    machine, columns, peers = data["machine"], data["columns"], data.get("peers", [])
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
        "| case | reduction | " + " | ".join(columns) + " | numba vs fastest peer |",
        "|---|---|" + "---:|" * (len(columns) + 1),
    ]
    ratios = []
    for row in data["rows"]:
        times = row["times"]
        cells = [f"{times[c]:.2f}" if c in times else "-" for c in columns]
        speedup = _speedup(times, peers)
        if speedup != "-":
            ratios.append(float(speedup[:-1]))
        lines.append(
            f"| {row['case']} | {row['reduction']} | " + " | ".join(cells) + f" | {speedup} |"
        )
    if ratios:
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        lines += [
            "",
            f"numba against the fastest peer of each row: geometric mean {geomean:.2f}x, "
            f"lowest {min(ratios):.2f}x (peers: {', '.join(peers)}).",
        ]
    return "\n".join(lines) + "\n"


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
