"""Sphinx extension: the dtype x reduction x backend table, made from the registry at build time.

On ``builder-inited`` it asks :func:`scatterx.backends` what every registered backend serves
and writes ``generated/support_table.md``, which ``contract.md`` includes. The table is
therefore the code's own answer, never a copy that can drift from it. The contract page is
re-read on every build, since the registry may change without any page changing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import scatterx

TARGET = Path("generated") / "support_table.md"
INCLUDED_BY = "contract"


def _cell(records: list[scatterx.BackendRecord], key: str, reduction: str) -> str:
    """The backends computing ``reduction`` on ``key``, or the contract's TypeError."""
    if reduction not in scatterx.DTYPE_REDUCTIONS[key]:
        return "TypeError"
    served = [r.name for r in records if reduction in r.capabilities.get(key, frozenset())]
    return ", ".join(served) if served else "none"


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def support_table(records: list[scatterx.BackendRecord]) -> str:
    """The Markdown of the support and availability tables for ``records``."""
    reductions = scatterx.REDUCTIONS
    lines = [
        "| dtype | " + " | ".join(reductions) + " |",
        "|---|" + "---|" * len(reductions),
    ]
    for key in scatterx.DTYPE_KEYS:
        cells = [_cell(records, key, reduction) for reduction in reductions]
        lines.append(f"| `{key}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Registered backends, in priority order (lower runs first in automatic choice),",
        "as seen on the machine that built this page:",
        "",
        "| backend | priority | serves | status on the build machine |",
        "|---|---|---|---|",
    ]
    for record in records:
        status = (
            f"available ({record.version})"
            if record.available
            else f"unavailable: {_escape(record.reason or '')}"
        )
        types = ", ".join(f"`{t}`" for t in record.array_types) or "-"
        lines.append(f"| {record.name} | {record.priority} | {types} | {status} |")
    return "\n".join(lines) + "\n"


def _write(app: Any) -> None:
    target = Path(app.srcdir) / TARGET
    target.parent.mkdir(parents=True, exist_ok=True)
    text = support_table(scatterx.backends())
    # Rewriting identical text would touch the mtime and needlessly dirty the build.
    if not target.exists() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")


def _outdated(app: Any, env: Any, added: Any, changed: Any, removed: Any) -> list[str]:
    return [INCLUDED_BY]


def setup(app: Any) -> dict[str, Any]:
    """Register the hooks with Sphinx."""
    app.connect("builder-inited", _write)
    app.connect("env-get-outdated", _outdated)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
