"""The command line: ``backends`` lists the registry, ``check`` runs the conformance cases."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from typing import TextIO

from ._dtypes import DTYPE_KEYS, REDUCTIONS
from ._registry import BackendRecord, backends


def _table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip(), file=out
        )
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)


def _dtype_summary(record: BackendRecord) -> str:
    served = [k for k in DTYPE_KEYS if record.capabilities.get(k)]
    missing = [k for k in DTYPE_KEYS if k not in served]
    if not missing:
        return "all"
    if len(missing) < len(served):
        return "all but " + ", ".join(missing)
    return ", ".join(served) or "-"


def print_backends(out: TextIO = sys.stdout) -> int:
    """Print one row per registered backend: availability or reason, dtypes, reductions."""
    rows = [["backend", "priority", "serves", "dtypes", "reductions", "status"]]
    for record in backends():
        status = (
            f"available ({record.version})"
            if record.available
            else (f"unavailable: {record.reason}")
        )
        rows.append(
            [
                record.name,
                str(record.priority),
                ", ".join(record.array_types) or "-",
                _dtype_summary(record),
                ", ".join(r for r in REDUCTIONS if r in record.reductions) or "-",
                status,
            ]
        )
    _table(rows, out)
    return 0


def _family(name: str) -> str:
    return name.partition(":")[0]


def run_check(names: Sequence[str] = (), out: TextIO = sys.stdout, verbose: bool = False) -> int:
    """Run every conformance case on every available backend (or those named).

    Prints a case-family x backend table of passed/failed/skipped counts and the failures;
    returns 1 if anything failed or no backend was available, else 0.
    """
    from .testing import all_cases, run_case

    records = [r for r in backends() if (r.name in names if names else r.available)]
    if not records:
        print("no backend to check", file=out)
        return 1
    cases = all_cases()
    counts: Counter[tuple[str, str, str]] = Counter()
    failures: list[str] = []
    for record in records:
        print(f"checking {record.name} on {len(cases)} cases ...", file=sys.stderr, flush=True)
        for case in cases:
            outcome = run_case(record.name, case)
            counts[(_family(case.family), record.name, outcome.status)] += 1
            if outcome.status == "failed":
                failures.append(f"{record.name} {case.name}: {outcome.detail}")
            elif verbose and outcome.status == "skipped":
                print(f"skipped {record.name} {case.name}: {outcome.detail}", file=out)
    families = list(dict.fromkeys(_family(c.family) for c in cases))
    rows = [["case family", *(f"{r.name} pass/fail/skip" for r in records)]]
    for family in [*families, "total"]:
        row = [family]
        for record in records:

            def count(status: str, name: str = record.name, fam: str = family) -> int:
                return sum(
                    v
                    for (f, n, s), v in counts.items()
                    if n == name and s == status and fam in (f, "total")
                )

            row.append(f"{count('passed')}/{count('failed')}/{count('skipped')}")
        rows.append(row)
    _table(rows, out)
    for line in failures:
        print(f"FAILED {line}", file=out)
    print(f"{'FAILED' if failures else 'OK'}: {len(failures)} failure(s)", file=out)
    return 1 if failures else 0
