"""pytest itself collects the examples of the docstrings and of the documentation pages.

pyproject.toml asks for them (``--doctest-modules``, ``--doctest-glob=*.md``) and the root
conftest.py says how a Markdown page is read. This checks that no file with examples is
left out, as a wrong path, glob or ignore rule would do without a word.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPT = re.compile(r"^\s*>>> ", re.M)
NOT_PAGES = {"_build", "generated"}


def files_with_examples() -> set[str]:
    """The modules of src/ and backends/, and the pages of docs/, with a ``>>>`` line."""
    modules = [path for folder in ("src", "backends") for path in (ROOT / folder).rglob("*.py")]
    pages = [
        path
        for path in (ROOT / "docs").rglob("*.md")
        if not NOT_PAGES & set(path.relative_to(ROOT / "docs").parts)
    ]
    return {
        path.relative_to(ROOT).as_posix()
        for path in [*modules, *pages]
        if PROMPT.search(path.read_text(encoding="utf-8"))
    }


def test_every_file_with_examples_is_collected() -> None:
    command = [sys.executable, "-m", "pytest", "-n0", "--collect-only", "-q", "-rs"]
    command += ["-p", "no:cacheprovider", "src", "backends", "docs"]
    result = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    collected = {line.partition("::")[0] for line in result.stdout.splitlines() if "::" in line}
    # A module that imports a library missing here is skipped, with the reason.
    skipped = set(re.findall(r"^SKIPPED \[\d+\] ([^:]+):", result.stdout, re.M))
    expected = files_with_examples()
    assert {"src/scatterx/_api.py", "docs/quickstart.md"} <= expected
    missing = sorted(expected - collected - skipped)
    assert not missing, f"files with >>> examples that pytest does not collect: {missing}"
