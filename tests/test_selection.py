"""Backend choice: precedence, scoping across threads, explain() and its log lines."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx.backend import ScatterRequest


class RecordingBackend:
    """A NumPy backend that serves float64 only, runs first, and records its calls."""

    array_types = ("numpy:ndarray",)
    capabilities: Mapping[str, frozenset[str]] = {"float64": frozenset(scatterx.REDUCTIONS)}
    version = "1"

    def __init__(self, name: str, priority: int = 1) -> None:
        self.name = name
        self.priority = priority
        self.calls = 0

    def available(self) -> str | None:
        return None

    def can_run(self, request: ScatterRequest) -> str | None:
        return None if request.dtype_key == "float64" else "serves float64 only"

    def scatter_elements(self, request: ScatterRequest) -> Any:
        self.calls += 1
        from scatterx_numpy._kernel import scatter_elements

        return scatter_elements(request)


@pytest.fixture
def fake(clean_selection: None) -> RecordingBackend:
    backend = RecordingBackend("fake")
    scatterx.register_backend(backend)
    return backend


def _call(dtype: Any = np.float64, **kw: Any) -> Any:
    return scatterx.scatter_elements(np.zeros(4, dtype), np.array([1]), np.ones(1, dtype), **kw)


def _runs_on(fake: RecordingBackend, **kw: Any) -> str:
    before = fake.calls
    _call(**kw)
    return "fake" if fake.calls > before else "numpy"


def test_priority_picks_the_first_backend_that_can_run(fake: RecordingBackend) -> None:
    assert _runs_on(fake) == "fake"
    before = fake.calls
    _call(np.float32)
    assert fake.calls == before


def test_precedence_call_then_scope_then_process_then_env(
    fake: RecordingBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCATTERX_BACKEND", "numpy")
    assert _runs_on(fake) == "numpy"
    scatterx.set_backend("fake")
    assert _runs_on(fake) == "fake"
    with scatterx.use_backend("numpy"):
        assert _runs_on(fake) == "numpy"
        with scatterx.use_backend(["fake", "numpy"]):
            assert _runs_on(fake) == "fake"
        assert _runs_on(fake, backend="fake") == "fake"
    scatterx.set_backend(None)
    assert _runs_on(fake) == "numpy"


def test_the_environment_variable_is_read_at_every_call(
    fake: RecordingBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Set, unset and set again between calls, also in an ``os.environ`` replaced whole."""
    assert _runs_on(fake) == "fake"
    monkeypatch.setenv("SCATTERX_BACKEND", "numpy")
    assert _runs_on(fake) == "numpy"
    monkeypatch.delenv("SCATTERX_BACKEND")
    assert _runs_on(fake) == "fake"
    monkeypatch.setattr(os, "environ", {"SCATTERX_BACKEND": "numpy"})
    assert _runs_on(fake) == "numpy"


def test_a_sequence_falls_through_to_the_next_backend(fake: RecordingBackend) -> None:
    out = _call(np.float32, backend=["fake", "numpy"])
    assert out.dtype == np.float32


def test_naming_a_backend_that_cannot_run_raises_its_reason(fake: RecordingBackend) -> None:
    with pytest.raises(scatterx.BackendError, match="fake: serves float64 only"):
        _call(np.float32, backend="fake")


UNKNOWN = r"unknown backend 'nope' in {}; registered backends: .*numpy"


def test_unknown_names_list_the_registered_ones(
    fake: RecordingBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match=UNKNOWN.format("backend=")):
        _call(backend="nope")
    with pytest.raises(ValueError, match=UNKNOWN.format("use_backend")):
        scatterx.use_backend("nope").__enter__()
    with pytest.raises(ValueError, match=UNKNOWN.format("set_backend")):
        scatterx.set_backend(["numpy", "nope"])
    monkeypatch.setenv("SCATTERX_BACKEND", "numpy,nope")
    with pytest.raises(ValueError, match=UNKNOWN.format("SCATTERX_BACKEND")):
        _call()


def test_use_backend_is_per_thread_and_set_backend_is_process_wide(
    fake: RecordingBackend,
) -> None:
    seen: dict[str, str] = {}

    def worker(key: str) -> None:
        seen[key] = str(scatterx.explain(np.zeros(2), np.array([0]), np.ones(1)).backend)

    with scatterx.use_backend("numpy"):
        thread = threading.Thread(target=worker, args=("scoped",))
        thread.start()
        thread.join()
    scatterx.set_backend("numpy")
    thread = threading.Thread(target=worker, args=("process",))
    thread.start()
    thread.join()
    assert seen == {"scoped": "fake", "process": "numpy"}


def test_explain_says_who_runs_and_why_the_others_do_not(fake: RecordingBackend) -> None:
    decision = scatterx.explain(np.zeros(3, np.float32), np.array([0]), np.ones(1, np.float32))
    assert decision.backend == "numpy"
    assert decision.source == "automatic priority"
    text = str(decision)
    assert text.splitlines()[0].startswith("numpy runs scatter_elements(numpy:ndarray float32")
    assert "  fake: serves float64 only" in text
    assert "  numpy: runs" in text
    assert fake.calls == 0


def test_explain_names_the_backends_that_come_later(fake: RecordingBackend) -> None:
    decision = scatterx.explain(np.zeros(3), np.array([0]), np.ones(1))
    assert decision.reasons["numpy"] == "could run, but fake comes first"


def test_each_decision_is_logged_at_debug(
    fake: RecordingBackend, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="scatterx"):
        _call()
    assert any("fake runs scatter_elements" in r.getMessage() for r in caplog.records)
