"""Shared fixtures: a registry that each test may change and that is restored after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import scatterx
from scatterx import _registry, _select


@pytest.fixture
def clean_selection(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No env var, no process default, and the registry as installed, before and after."""
    monkeypatch.delenv(_select.ENV_VAR, raising=False)
    scatterx.set_backend(None)
    saved = _registry._backends
    yield
    scatterx.set_backend(None)
    _registry._backends = saved
    _select.clear_cache()
