"""The code reads no CPython internals (style.md, rule 10): checked in its source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
SOURCES = sorted(p for folder in ("src", "backends") for p in (ROOT / folder).rglob("*.py"))

#: ``os.environ``'s private members: its dict of encoded keys and the functions that encode
#: them. ``os.environ.get`` is the public way to read a variable.
ENVIRON_INTERNALS = frozenset({"_data", "encodekey", "decodekey", "encodevalue", "decodevalue"})


def _internals_used(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every ``x.<internal>`` and ``getattr(x, "<internal>")`` in ``tree``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ENVIRON_INTERNALS:
            found.append((node.lineno, node.attr))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in ENVIRON_INTERNALS
        ):
            found.append((node.lineno, str(node.args[1].value)))
    return found


def test_the_scan_sees_os_environs_internals() -> None:
    code = 'import os\nE = getattr(os.environ, "_data", None)\nK = os.environ.encodekey("A")\n'
    assert _internals_used(ast.parse(code)) == [(2, "_data"), (3, "encodekey")]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_reads_os_environs_internals(path: Path) -> None:
    used = _internals_used(ast.parse(path.read_text(), str(path)))
    assert not used, f"{path.relative_to(ROOT)} reads os.environ's internals at {used}"
