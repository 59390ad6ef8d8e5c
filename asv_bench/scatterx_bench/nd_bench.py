"""``python asv_bench/bench.py --nd``: scatterx's ScatterND and GatherND against onnxruntime
(its default threads and one thread) and torch's row calls, per case, reduction and mode.

Each contestant runs on its own copy of data, in the case's layout (in place: the copy it
updates call after call); each result is compared with the exact one, the rows applied in
their order (:func:`.nd.exact_nd`), before anything is timed: onnxruntime's default threads
race on rows that name one slice, and their sum changes from call to call. Then all are
timed interleaved in rounds (:mod:`.timing`), and each peer's time over numba's is set
against issue 45's target for the cell, where it has one.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .base import MODES, BenchCase, Call, Mode, Unavailable
from .cases import ND_BACKENDS, ND_PEERS, first_call, make_case
from .nd import ND_CASE_NAMES, exact_nd, max_difference
from .peers import ONNXRUNTIME_ONE_THREAD
from .timing import Timed, cell, interleaved, legend

#: Issue 45: how many times faster than each peer numba must be on the embedding gradient.
TARGETS: dict[tuple[str, str, Mode], dict[str, float]] = {
    ("embedding-grad-nd", "add", "new"): {
        ONNXRUNTIME_ONE_THREAD: 1.5,
        "onnxruntime": 1.0,
        "torch": 1.5,
    },
    ("embedding-grad-nd", "add", "in-place"): {
        ONNXRUNTIME_ONE_THREAD: 2.0,
        "onnxruntime": 2.0,
        "torch": 1.5,
    },
}
#: New-array calls compared with the exact result, per contestant: enough for onnxruntime's
#: threads to show a sum that changes from call to call. In place only the first call is
#: (later calls start from what it left).
CHECKED_CALLS = 3
Skip = Callable[[str, str], None]


@dataclass(frozen=True)
class Checked:
    """How far a contestant's results lay from the exact one, and whether they differed."""

    max_difference: float
    varies: bool

    def __str__(self) -> str:
        shown = "0" if self.max_difference == 0 else f"{self.max_difference:.3g}"
        return shown + (", varies" if self.varies else "")


@dataclass(frozen=True)
class NDCell:
    """One case, reduction and mode: every contestant's time and check."""

    case: str
    op: str
    reduction: str
    mode: Mode
    timed: dict[str, Timed]
    checked: dict[str, Checked]

    def speedup(self, peer: str) -> float | None:
        """The peer's time over numba's: above 1, numba is faster."""
        if "numba" not in self.timed or peer not in self.timed:
            return None
        return self.timed[peer].median_ms / self.timed["numba"].median_ms

    def target(self, peer: str) -> float | None:
        return TARGETS.get((self.case, self.reduction, self.mode), {}).get(peer)

    def verdict(self, peer: str) -> str:
        """``met`` or ``short`` of the target; ``?`` where a spread forbids a verdict."""
        ratio, target = self.speedup(peer), self.target(peer)
        if ratio is None or target is None:
            return "-"
        if self.timed[peer].noisy or self.timed["numba"].noisy:
            return "?"
        return "met" if ratio >= target else "short"


def describe(name: str, op: str, reduction: str, mode: Mode) -> str:
    """What the contestant ``name`` calls, in a few words."""
    new = mode == "new"
    if name in ("onnxruntime", ONNXRUNTIME_ONE_THREAD):
        threads = "1 thread" if name == ONNXRUNTIME_ONE_THREAD else "default threads"
        node = "GatherND" if op == "gather_nd" else "ScatterND"
        return f"{node} node, {threads}" + ("" if new else " (new array)")
    if name == "torch":
        if op == "gather_nd":
            return "data[rows]" if new else "index_select(out=)"
        call = {"none": "index_copy", "add": "index_add"}.get(reduction, "index_reduce")
        return call if new else f"{call}_"
    return f"{op}({'' if new else 'out=, '}backend={name})"


def _owned(case: BenchCase, mode: Mode) -> BenchCase:
    """The case with a copy of data of its own, in the same layout (in place the call makes
    its own: :func:`.cases.build_call`)."""
    return replace(case, data=case.data.copy(order="K")) if mode == "new" else case


def check(call: Call, first: Any, exact: Any, calls: int) -> Checked:
    """Compare ``first`` and the results of ``calls - 1`` more calls with ``exact``, each
    as it comes (a contestant may reuse its result's memory)."""
    differences, sums = [], set()
    for k in range(calls):
        array = np.ascontiguousarray(np.asarray(call() if k else first))
        differences.append(max_difference(array, exact))
        sums.add(zlib.crc32(array.reshape(-1).view(np.uint8).data))
    return Checked(max(differences), len(sums) > 1)


def contestants(
    case: BenchCase, reduction: str, mode: Mode, names: Sequence[str], exact: Any, skip: Skip
) -> tuple[dict[str, Call], dict[str, Checked]]:
    """Each contestant's call (warmed up on its own data) and its check against ``exact``."""
    calls, checked = {}, {}
    for name in names:
        try:
            call, first = first_call(name, _owned(case, mode), reduction, mode)
        except Unavailable as why:
            skip(name, str(why))
            continue
        calls[name] = call
        checked[name] = check(call, first, exact, CHECKED_CALLS if mode == "new" else 1)
    return calls, checked


def time_nd_cell(
    case: BenchCase,
    reduction: str,
    mode: Mode,
    names: Sequence[str],
    timing: tuple[int, int],
    skip: Skip,
    exact: Any = None,
) -> NDCell:
    """Check, then time ``names`` on ``case`` interleaved (``timing``: rounds, calls each)."""
    if exact is None:
        exact = exact_nd(case, reduction)
    calls, checked = contestants(case, reduction, mode, names, exact, skip)
    timed = interleaved(calls, *timing)
    return NDCell(case.name, case.op, reduction, mode, timed, checked)


def print_nd(cells: list[NDCell], shapes: dict[str, str]) -> None:
    """A block per cell: every contestant, its check, and each peer's time over numba's."""
    head = ["contestant", "call", "median ms", "max |diff| vs exact", "peer/numba", "target"]
    # A call under 0.1 ms shows its microseconds: "12.34 us ±3%".
    for n, nd_cell in enumerate(cells):
        title = f"{nd_cell.case} {nd_cell.reduction} {nd_cell.mode}: {shapes[nd_cell.case]}"
        print(("\n" if n else "") + title)
        lines = [head]
        for name, timed in nd_cell.timed.items():
            ratio = nd_cell.speedup(name)
            target = nd_cell.target(name)
            lines.append(
                [
                    name,
                    describe(name, nd_cell.op, nd_cell.reduction, nd_cell.mode),
                    shown_time(timed),
                    str(nd_cell.checked[name]),
                    "-" if name == "numba" or ratio is None else f"{ratio:.2f}x",
                    "-" if target is None else f"{target:.1f}x {nd_cell.verdict(name)}",
                ]
            )
        widths = [max(len(line[k]) for line in lines) for k in range(len(head))]
        for line in lines:
            padded = (c.ljust(w) for c, w in zip(line, widths, strict=True))
            print(("  " + "  ".join(padded)).rstrip())
        verdicts = [f"{p} {nd_cell.verdict(p)}" for p in nd_cell.timed if nd_cell.target(p)]
        if verdicts:
            print("  verdict: " + ", ".join(verdicts))
    notes = (
        "peer/numba: the peer's median over numba's (above 1, numba is faster); target: issue "
        "45's least ratio, met or short (?: a spread over the limit, no verdict)",
        "max |diff| vs exact: the largest difference from the sequential loop over the rows in "
        f"their order, over the first {CHECKED_CALLS} calls new, the first call in place; "
        "varies: those calls' results differed bit for bit",
        "onnxruntime cannot write into its input: its in-place rows time its new-array call",
        legend(),
    )
    for note in notes:
        print(textwrap.fill(note, 100, initial_indent="- ", subsequent_indent="  "))


def shown_time(timed: Timed) -> str:
    """:func:`.timing.cell`, in microseconds under 0.1 ms (the small case's calls)."""
    if timed.median_ms >= 0.1:
        return cell(timed.median_ms, timed.spread)
    return cell(timed.median_ms * 1e3, timed.spread).replace(" ±", " us ±", 1)


def _shape(case: BenchCase) -> str:
    parts = [f"data {case.data.dtype} {tuple(case.data.shape)}"]
    parts.append(f"indices {case.indices.dtype} {tuple(case.indices.shape)}")
    if case.updates is not None:
        parts.append(f"updates {tuple(case.updates.shape)}")
    return ", ".join(parts)


def _names(args: argparse.Namespace) -> list[str]:
    """The chosen backends (default: numba, numpy), numba first, then the chosen peers."""
    chosen = list(dict.fromkeys(args.backend or ND_BACKENDS))
    return [*sorted(chosen, key=lambda n: n != "numba"), *dict.fromkeys(args.peer or ND_PEERS)]


def _teller() -> Skip:
    """Prints why a contestant is skipped, once for each contestant and reason."""
    told: set[tuple[str, str]] = set()

    def skip(name: str, why: str) -> None:
        if (name, why) not in told:
            told.add((name, why))
            print(f"bench: skipped {name}: {why}", file=sys.stderr, flush=True)

    return skip


def run(args: argparse.Namespace) -> int:
    """The ``--nd`` table of the ND cases, reductions and modes that ``args`` names."""
    cases = args.case or ND_CASE_NAMES
    modes: list[Mode] = list(dict.fromkeys(args.mode or MODES))
    names, skip = _names(args), _teller()
    start = os.getloadavg()[0]
    cells, shapes = [], {}
    for name in cases:
        case = make_case(name, args.size)
        shapes[name] = _shape(case)
        reductions = ("none",) if case.op == "gather_nd" else (args.reduction or ("add",))
        for reduction in reductions:
            exact = exact_nd(case, reduction)
            for mode in modes:
                print(f"bench --nd: {name} {reduction} {mode} ...", file=sys.stderr, flush=True)
                timing = (args.rounds, args.repeat)
                cells.append(time_nd_cell(case, reduction, mode, names, timing, skip, exact))
        del case
    print_nd(cells, shapes)
    end = os.getloadavg()[0]
    print(f"load average (1 min) at the start {start:.2f}, at the end {end:.2f}")
    return 0
