"""The command line: ``backends`` lists the registry, ``check`` runs the conformance cases
(of scatter_elements, gather_elements, scatter_nd and gather_nd)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from ._dtypes import DTYPE_KEYS, REDUCTIONS
from ._registry import BackendRecord, backends

if TYPE_CHECKING:  # the suite is imported by check only, on first use
    from .testing import ConformanceCase


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


def _columns(
    records: Sequence[BackendRecord], libraries: Sequence[str]
) -> list[tuple[str, str | None]]:
    """(backend, library) for each column of the table; None: the backend's own arrays.

    A backend whose arrays no library's are carried to (Dask's) has its own column only;
    the onnx column (the evaluator's tensors are NumPy arrays) is a CPU backend's only.
    """
    from .testing._libraries import NATIVE, device_for
    from .testing._onnx_cases import ONNX

    def served(record: BackendRecord, name: str) -> bool:
        device = device_for(record.array_types)
        return name == NATIVE or device == "cpu" or (device is not None and name != ONNX)

    return [
        (record.name, None if name == NATIVE else name)
        for record in records
        for name in libraries
        if served(record, name)
    ]


def _label(backend: str, library: str | None) -> str:
    return backend if library is None else f"{backend}+{library}"


def _default_libraries() -> list[str]:
    """Native arrays, every array library installed here, and onnx's evaluator if installed."""
    from .testing._libraries import LIBRARIES, NATIVE, library
    from .testing._onnx_cases import ONNX, onnx_unavailable

    installed = [name for name in LIBRARIES if library(name).available() is None]
    return [NATIVE, *installed, *([ONNX] if onnx_unavailable() is None else [])]


class _Tally:
    """What ``check`` counts and reports: outcomes by (family, operation, column, status),
    the failures, and the backends and columns named but unavailable (said once)."""

    def __init__(self, names: Sequence[str], libraries: Sequence[str]) -> None:
        self.names, self.libraries = names, libraries
        self.counts: Counter[tuple[str, str, str, str]] = Counter()
        self.failures: list[str] = []
        self.missing: set[str] = set()

    def add(self, backend: str, library: str | None, case: ConformanceCase, outcome: Any) -> None:
        label = _label(backend, library)
        self.counts[(_family(case.family), case.operation, label, outcome.status)] += 1
        if outcome.status == "failed":
            self.failures.append(f"{label} {case.name}: {outcome.detail}")
        elif outcome.unavailable or outcome.library_unavailable:
            what = backend if outcome.unavailable else label
            named = backend in self.names if outcome.unavailable else library in self.libraries
            if named and what not in self.missing:
                self.failures.append(f"{what}: {outcome.detail}")
            self.missing.add(what)

    def cell(self, label: str, row: str, by: int) -> str:
        """``passed/failed/skipped`` of column ``label`` for ``row``: a family (``by`` 0), an
        operation (``by`` 1), or ``"total"``."""
        counts = [
            sum(
                v
                for key, v in self.counts.items()
                if key[2] == label and key[3] == status and row in (key[by], "total")
            )
            for status in ("passed", "failed", "skipped")
        ]
        return "/".join(map(str, counts))


def _print_tables(
    tally: _Tally, cases: Sequence[ConformanceCase], labels: list[str], out: TextIO
) -> None:
    """The family table, then the operation table: passed/failed/skipped per column."""
    print("passed/failed/skipped cases by case family; columns: backend[+array library]", file=out)
    families = list(dict.fromkeys(_family(c.family) for c in cases))
    rows = [["case family", *labels]]
    rows += [[f, *(tally.cell(label, f, 0) for label in labels)] for f in [*families, "total"]]
    _table(rows, out)
    print("\nthe same, by operation", file=out)
    operations = list(dict.fromkeys(c.operation for c in cases))
    rows = [["operation", *labels]]
    rows += [[o, *(tally.cell(label, o, 1) for label in labels)] for o in [*operations, "total"]]
    _table(rows, out)


def run_check(
    names: Sequence[str] = (),
    out: TextIO = sys.stdout,
    verbose: bool = False,
    libraries: Sequence[str] = (),
) -> int:
    """Run every conformance case, of scatter_elements, gather_elements, scatter_nd and
    gather_nd, on every available backend (or those named), on each backend's own arrays
    and through every installed array library (or those named).

    Prints a case-family x (backend, library) table of passed/failed/skipped counts, the
    same by operation, and the failures; returns 1 if anything failed, no backend was
    available, or a backend or library named is unavailable, 2 for an unknown library
    name, else 0.
    """
    from .testing import matrix_cases, run_case
    from .testing._libraries import LIBRARIES, NATIVE, enable_jax_x64
    from .testing._onnx_cases import ONNX, run_onnx_case

    known = (NATIVE, *LIBRARIES, ONNX)
    unknown = [name for name in libraries if name not in known]
    if unknown:
        print(f"unknown array library {unknown[0]!r}; choose from {', '.join(known)}", file=out)
        return 2
    chosen = list(dict.fromkeys(libraries)) if libraries else _default_libraries()
    if "jax" in chosen:
        # JAX's 64-bit dtypes for this process, before any JAX array is made, so that the
        # jax column covers int64, float64 and complex128 too (else skipped, not downcast).
        enable_jax_x64()
    records = [r for r in backends() if (r.name in names if names else r.available)]
    if not records:
        print("no backend to check", file=out)
        return 1
    cases = matrix_cases()
    columns = _columns(records, chosen)
    tally = _Tally(names, libraries)
    for backend, library in columns:
        label = _label(backend, library)
        print(f"checking {label} on {len(cases)} cases ...", file=sys.stderr, flush=True)
        for case in cases:
            if library == ONNX:
                outcome = run_onnx_case(backend, case)
            else:
                outcome = run_case(backend, case, library=library)
            tally.add(backend, library, case, outcome)
            if verbose and outcome.status == "skipped":
                print(f"skipped {label} {case.name}: {outcome.detail}", file=out)
    _print_tables(tally, cases, [_label(*column) for column in columns], out)
    for line in tally.failures:
        print(f"FAILED {line}", file=out)
    print(f"{'FAILED' if tally.failures else 'OK'}: {len(tally.failures)} failure(s)", file=out)
    return 1 if tally.failures else 0
