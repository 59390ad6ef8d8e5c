"""The end of a run: skips counted by reason instead of listed one per line.

The fixtures that doctests need too (``clean_selection``) live in the root conftest.py.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Generator, Iterable

import pytest

import scatterx
from _cupy_emulation import emulator, on_host  # noqa: F401  (fixtures of the cupy emulation)

# A dtype and a reduction (or gather_elements) named together are one case among many:
# "numba declines StringDType add" and "numba declines bytes_ max" are the same reason.
_CASE = re.compile(
    rf"\b(?:{'|'.join(map(re.escape, scatterx.DTYPE_KEYS))})"
    rf" (?:{'|'.join(map(re.escape, (*scatterx.REDUCTIONS, 'gather_elements')))})\b"
)


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The text given to ``pytest.skip`` (or to a skip mark) for this skip."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def normalised(reason: str) -> str:
    """``reason`` with what varies from case to case replaced by placeholders."""
    return _CASE.sub("<dtype> <reduction>", reason)


def skips_by_reason(
    reports: Iterable[pytest.TestReport | pytest.CollectReport],
) -> list[tuple[int, str, list[str]]]:
    """(count, normalised reason, test files) for every reason, most frequent first."""
    counts: Counter[str] = Counter()
    files: defaultdict[str, dict[str, None]] = defaultdict(dict)
    for report in reports:
        reason = normalised(skip_reason(report))
        counts[reason] += 1
        files[reason][report.nodeid.partition("::")[0]] = None
    return [(count, reason, list(files[reason])) for reason, count in counts.most_common()]


@pytest.hookimpl(wrapper=True)
def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter,
) -> Generator[None, None, None]:
    """After pytest's short summary: one line per skip reason, with its count.

    Skipped only when the report lists skips itself (``-rs``, ``-ra``) or lists nothing
    (``-rN``, ``--no-summary``). With ``--require-backend NAME`` the skips of NAME are
    failures, listed with the others.
    """
    yield
    reportchars = terminalreporter.reportchars.replace("w", "")
    skipped = terminalreporter.stats.get("skipped", [])
    quiet = not reportchars or terminalreporter.config.option.no_summary
    if not skipped or quiet or "s" in reportchars:
        return
    terminalreporter.write_sep("=", f"{len(skipped)} skipped, by reason (-rs lists each)")
    width = len(str(len(skipped)))
    for count, reason, where in skips_by_reason(skipped):
        shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
        terminalreporter.write_line(f"{count:>{width}} {reason}  [{shown}]")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put each test's xdist group in its id, as pytest-xdist's ``--dist=loadgroup`` means.

    An xdist worker appends ``@<group>`` to the id of each test marked ``xdist_group``,
    and the controller then sends the tests of one group to one worker. pytest-xdist 3.8
    does it by setting ``item._nodeid``, which pytest 9 no longer reads (the id is
    ``item._id``): no id had its group, and each group's tests (the conformance cases of
    one compiled signature, the cupy emulation's) were shared out like any others. Runs
    after xdist's hook, and only where that left the ids without their group.
    """
    if not getattr(config.option, "loadgroup", False):  # set in xdist workers only
        return
    try:
        from _pytest.nodeid import coerce_node_id
    except ImportError:  # pytest 8: xdist's own hook set the ids (its ``_nodeid``)
        return

    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        if names and "@" not in item.nodeid and hasattr(item, "_id"):
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(sorted(names))}")
