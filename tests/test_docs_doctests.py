"""The ``>>>`` examples of the documentation pages (docs/**/*.md) run as doctests."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
# Build outputs and generated files are not pages anyone wrote examples in.
SKIP_DIRS = {"_build", "generated"}
# A fenced block: ``` or ~~~ with an optional language, up to the same fence alone on a line.
FENCE = re.compile(r"^(?P<fence>```|~~~)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def examples(page: Path) -> list[doctest.Example]:
    """The ``>>>`` examples of the page's fenced blocks, in order, with their page lines.

    Only fenced blocks count: Markdown prose around them is not doctest input, and a
    closing fence would otherwise be read as expected output.
    """
    text = page.read_text(encoding="utf-8")
    parser = doctest.DocTestParser()
    found: list[doctest.Example] = []
    for match in FENCE.finditer(text):
        body = match["body"]
        if not body.lstrip().startswith(">>>"):
            continue
        first_line = text.count("\n", 0, match.start("body"))
        for example in parser.get_examples(body, name=page.name):
            example.lineno += first_line
            found.append(example)
    return found


PAGES = sorted(p for p in DOCS.rglob("*.md") if not SKIP_DIRS & set(p.parts) and examples(p))


def test_pages_with_examples_are_found() -> None:
    found = {p.relative_to(DOCS).as_posix() for p in PAGES}
    assert {"quickstart.md", "guide.md", "contract.md", "writing_a_backend.md"} <= found


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
@pytest.mark.usefixtures("clean_selection")
def test_page_examples_run(page: Path) -> None:
    name = page.relative_to(DOCS).as_posix()
    test = doctest.DocTest(examples(page), {}, name, str(page), 0, None)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    failures: list[str] = []
    runner.run(test, out=failures.append)
    assert runner.tries > 0
    assert runner.failures == 0, "".join(failures)
