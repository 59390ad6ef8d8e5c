"""The Examples sections of the public docstrings run as doctests."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "scatterx._api",
    "scatterx._registry",
    "scatterx._select",
    "scatterx.testing._compare",
    "scatterx.testing._oracle",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(importlib.import_module(name), optionflags=flags)
    assert result.attempted > 0
    assert result.failed == 0
