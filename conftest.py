"""How pytest collects the doctests of src/, backends/ and docs/, and the state they start in.

pyproject.toml asks for the examples of every module (``--doctest-modules``) and of the
documentation pages (``--doctest-glob=*.md``). This file lives at the root, not in
tests/, because its rules and fixtures must reach items outside tests/.
"""

from __future__ import annotations

import ast
import doctest
import functools
import importlib.util
import os
import re
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

import scatterx
from scatterx.testing import scoped_registry

# Tests check which backend runs a call. With numba compiling in the background (its
# default: see docs/backends/numba.md), the first call of each kind in a process would run
# on numpy instead, depending on what the tests before it compiled. So every test, and
# every process a test starts, waits for numba's compiles; tests/test_numba_background.py
# asks for the background in processes of its own.
os.environ["SCATTERX_NUMBA_COMPILE"] = "wait"

ROOT = Path(__file__).parent
# Code whose modules are imported only to find their examples; tests/ skips for itself.
CODE_DIRS = tuple(ROOT / name for name in ("src", "backends", "docs"))

# The Sphinx configuration is not a module to import; build outputs are not pages.
collect_ignore = ["docs/conf.py", "docs/_build", "docs/generated"]

# A fenced block: ``` or ~~~ with an optional language, up to the same fence alone on a line.
FENCE = re.compile(r"^(?P<fence>```|~~~)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)


@pytest.fixture
def clean_selection(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No env var, no process default, and the registry as installed, before and after."""
    monkeypatch.delenv("SCATTERX_BACKEND", raising=False)
    scatterx.set_backend(None)
    with scoped_registry():
        yield
    scatterx.set_backend(None)


@pytest.fixture(autouse=True)
def _doctests_start_clean(request: pytest.FixtureRequest) -> None:
    """A doctest sees the backends as installed, whatever another test or page changed."""
    if isinstance(request.node, pytest.DoctestItem):
        request.getfixturevalue("clean_selection")


@functools.cache
def _imported_when_imported(module: Path) -> tuple[frozenset[str], frozenset[Path]]:
    """The top-level packages ``module`` imports at import time, and the files of its own
    package it imports then (relative imports, and the package's ``__init__.py``).

    Imports inside functions (optional libraries are imported on first use) and under
    ``if`` or ``try`` do not count.
    """
    packages: set[str] = set()
    # A module of a package is imported after the package itself.
    package = module.parent.parent if module.name == "__init__.py" else module.parent
    files = {package / "__init__.py"}
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            packages.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            packages.add(node.module.partition(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = module.parents[node.level - 1]
            for name in [node.module] if node.module else [a.name for a in node.names]:
                target = base.joinpath(*name.split("."))
                files.update((target.with_suffix(".py"), target / "__init__.py"))
    return frozenset(packages), frozenset(p for p in files if p != module and p.is_file())


def missing_libraries(module: Path) -> list[str]:
    """The libraries that importing ``module`` needs and that are not installed here.

    Follows the imports of the module's own package, so that a module importing a sibling
    that imports numba needs numba too.
    """
    packages: set[str] = set()
    seen: set[Path] = set()
    todo = {module}
    while todo:
        path = todo.pop()
        seen.add(path)
        found, files = _imported_when_imported(path)
        packages |= found
        todo |= files - seen
    return sorted(name for name in packages if importlib.util.find_spec(name) is None)


class NeedsMissingLibraries(pytest.File):
    """A module that cannot be imported here, so its examples cannot be found: a skip."""

    def collect(self) -> list[pytest.Item]:
        missing = ", ".join(missing_libraries(self.path))
        pytest.skip(f"its doctests need {missing} to import it, not installed here")


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(
    file_path: Path, parent: pytest.Collector
) -> Generator[None, list[pytest.Collector], list[pytest.Collector]]:
    """Skip, with the reason, the modules of src/, backends/, docs/ that cannot be imported."""
    collectors = yield
    if (
        collectors
        and file_path.suffix == ".py"
        and any(file_path.is_relative_to(folder) for folder in CODE_DIRS)
        and missing_libraries(file_path)
    ):
        return [NeedsMissingLibraries.from_parent(parent, path=file_path)]
    return collectors


def fenced_examples(text: str, name: str) -> list[doctest.Example]:
    """The ``>>>`` examples of a Markdown page's fenced blocks, in order, with their lines.

    Only fenced blocks that open with ``>>>`` count: Markdown prose around them is not
    doctest input, and a closing fence would otherwise be read as expected output.
    """
    parser = doctest.DocTestParser()
    found: list[doctest.Example] = []
    for match in FENCE.finditer(text):
        body = match["body"]
        if not body.lstrip().startswith(">>>"):
            continue
        first_line = text.count("\n", 0, match.start("body"))
        for example in parser.get_examples(body, name=name):
            example.lineno += first_line
            found.append(example)
    return found


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Read each Markdown page's examples from its fenced blocks only (see fenced_examples).

    pytest parses the whole page; a page whose ``>>>`` lines all lie outside fenced
    blocks has no examples and is dropped.
    """
    kept: list[pytest.Item] = []
    for item in items:
        if isinstance(item, pytest.DoctestItem) and item.path.suffix == ".md":
            item.dtest.examples = fenced_examples(item.dtest.docstring or "", item.dtest.name)
            if not item.dtest.examples:
                continue
        kept.append(item)
    items[:] = kept


# A documentation page whose examples import a library missing here (array_libraries.md:
# PyTorch, JAX, array-api-strict) is skipped, saying why, or fails when that library is
# required (--require-library NAME, as .ci/run does). The test extra brings JAX and
# array-api-strict but not PyTorch, whose default PyPI build is a CUDA build of several GiB.


def imported_libraries(examples: list[str]) -> set[str]:
    """The top-level packages that the source of ``examples`` imports."""
    found: set[str] = set()
    for source in examples:
        try:
            tree = ast.parse(source)
        except SyntaxError:  # not Python (doctest reports it when the example runs)
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.partition(".")[0])
    return found


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or fail, when required) a page whose examples need a missing library."""
    if not (isinstance(item, pytest.DoctestItem) and item.path.suffix == ".md"):
        return
    assert item.dtest is not None
    imported = imported_libraries([example.source for example in item.dtest.examples])
    missing = sorted(name for name in imported if importlib.util.find_spec(name) is None)
    if not missing:
        return
    reason = f"its examples need {', '.join(missing)}, not installed here"
    required = sorted(set(missing) & set(item.config.getoption("--require-library", [])))
    if required:
        pytest.fail(f"required array library {', '.join(map(repr, required))}: {reason}")
    pytest.skip(reason)
