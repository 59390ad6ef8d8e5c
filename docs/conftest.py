"""A documentation page whose examples import a library missing here is skipped, with why.

The root conftest.py reads a page's examples from its fenced ``>>>`` blocks. Some pages
show other array libraries (array_libraries.md: PyTorch, JAX, array-api-strict); the test
extra brings JAX and array-api-strict but not PyTorch, whose default PyPI build is a CUDA
build of several GiB. Such a page is skipped where a library it imports is missing, and
fails instead when that library is required (``--require-library NAME``, as .ci/run does).
"""

from __future__ import annotations

import ast
import importlib.util

import pytest


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
