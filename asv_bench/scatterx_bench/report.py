"""Saving a ``python asv_bench/bench.py`` run: the JSON record and the matplotlib chart."""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from .base import Mode
from .timing import STATISTIC

#: A row of the tables of ``--library``: case, reduction, median ms by column.
Row = tuple[str, str, dict[str, float]]


class StandardRow(NamedTuple):
    """A row of the standard table: one case, reduction and mode, median ms by column, and
    the relative spread of each column's round medians where it was timed in rounds."""

    case: str
    reduction: str
    mode: Mode
    times: dict[str, float]
    spreads: Mapping[str, float] = MappingProxyType({})


def cpu_model() -> str:
    """The processor's model name, as ``lscpu`` prints it ("Model name"), where Linux says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.lower().startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _versions() -> dict[str, str]:
    """Versions of scatterx and of every library whose speed the run measured."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in (
        "scatterx",
        "numpy",
        "numba",
        "cupy",
        "onnxruntime",
        "torch",
        "jax",
        "jaxlib",
        "dask",
        "distributed",
    ):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def record(
    rows: Sequence[StandardRow],
    columns: Sequence[str],
    command: Sequence[str],
    timing: tuple[int, int],
    peers: Sequence[str],
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """Everything a reader needs to trust the numbers: command, machine, versions, times.

    ``timing`` is (rounds, calls per round) of :func:`.timing.interleaved`. Each row carries
    its mode (``"new"`` or ``"in-place"``) and the spread of each time (a fraction of it);
    ``notes`` say what the in-place cells mean where a run has them.
    """
    rounds, calls = timing
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return {
        "command": " ".join(command),
        "unit": "ms",
        "statistic": STATISTIC.format(rounds=rounds, calls=calls),
        "machine": {
            "cpu_model": cpu_model(),
            "cpus": len(usable) if usable is not None else os.cpu_count(),
            "platform": platform.platform(),
            "python": sys.version.split()[0],
        },
        "versions": _versions(),
        "columns": list(columns),
        "peers": list(peers),
        "modes": list(dict.fromkeys(row.mode for row in rows)),
        "notes": list(notes),
        "rows": [
            {
                "case": row.case,
                "reduction": row.reduction,
                "mode": row.mode,
                "times": row.times,
                "spreads": dict(row.spreads),
            }
            for row in rows
        ],
    }


def write_json(path: str | Path, data: dict[str, Any]) -> None:
    """Write the record, keys in a stable order so that reruns diff cleanly."""
    Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def plot(path: str | Path, data: dict[str, Any]) -> None:
    """One panel per case: median ms (log scale) of every contestant for each reduction
    (and mode, where the run has both).

    Needs matplotlib (``pip install 'scatterx[bench]'``); the command checks before timing.
    """
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on CI machines
    import matplotlib.pyplot as plt

    rows, columns = data["rows"], data["columns"]
    cases = list(dict.fromkeys(row["case"] for row in rows))
    n_cols = min(2, len(cases))
    n_rows = math.ceil(len(cases) / n_cols)
    fig, axes = plt.subplots(
        n_rows, n_cols, figsize=(6.0 * n_cols, 3.6 * n_rows), squeeze=False, sharey=False
    )
    for ax, case in zip(axes.flat, cases, strict=False):
        _draw_case(ax, case, [row for row in rows if row["case"] == case], columns)
    for ax in list(axes.flat)[len(cases) :]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    # At most four entries a line: the tables of --library have long names.
    legend_lines = math.ceil(len(columns) / 4)
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(columns)), frameon=False)
    machine = data["machine"]
    fig.suptitle(f"{data['command']}\n{machine['cpus']} CPUs, {machine['cpu_model']}", fontsize=10)
    fig.tight_layout(rect=(0, 0.06 * (1 + (legend_lines - 1) / n_rows), 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _draw_case(ax: Any, case: str, rows: list[dict[str, Any]], columns: Sequence[str]) -> None:
    """Grouped bars of one case: a group per reduction and mode, a bar per contestant."""
    from matplotlib.ticker import FuncFormatter

    width = 0.8 / max(1, len(columns))
    for k, column in enumerate(columns):
        xs = [i + (k - (len(columns) - 1) / 2) * width for i in range(len(rows))]
        ys = [row["times"].get(column, math.nan) for row in rows]
        ax.bar(xs, ys, width, label=column)
    ax.set_title(case)
    ax.set_xticks(range(len(rows)), [_group(row) for row in rows])
    ax.set_yscale("log")
    # Log-scale bars start at the axis floor: put it well under the fastest bar.
    shown = [t for row in rows for t in row["times"].values() if t > 0]
    if shown:
        ax.set_ylim(bottom=min(shown) / 2)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    # Label the 2s and 5s between decades, not every minor tick: they would overlap.
    ax.yaxis.set_minor_formatter(
        FuncFormatter(lambda value, _: f"{value:g}" if f"{value:g}"[0] in "25" else "")
    )
    ax.set_ylabel("median ms (lower is better)")
    ax.grid(axis="y", which="both", alpha=0.3)


def _group(row: dict[str, Any]) -> str:
    """A group's label: the reduction, and "in place" under it for that mode."""
    in_place = row.get("mode", "new") == "in-place"
    return f"{row['reduction']}\nin place" if in_place else row["reduction"]
