"""One call goes through the pipeline once: its arrays' library found once (per type),
carried at most once, checked once, decided once, on a decision-cache miss too."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx import _pipeline, _plan, _run
from scatterx import libraries as _libraries
from scatterx._jax import trace as _jax
from scatterx._registry import current
from scatterx.libraries import base as _interop
from scatterx.libraries import torch as _torch_library

Counts = Counter[str]


def _counting(counts: Counts, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return function(*args, **kwargs)

    return counted


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch, clean_selection: None) -> Counts:
    """Counts of each step of the pipeline, from a cold start: no library known by type,
    no choice remembered."""
    counts: Counts = Counter()
    hooks = {
        "entries": [(_pipeline, "call")],
        "checks": [(_pipeline, "check"), (_run, "check")],
        "decisions": [
            (_pipeline, "decide"),
            (_run, "decide"),
            (_jax, "decide"),
            (_plan, "explain_plan"),
        ],
        "detections": [(_libraries, "_find_library")],
        "carries": [(_interop.Route, "carry")],
    }
    for name, places in hooks.items():
        for owner, attribute in places:
            original = getattr(owner, attribute)
            monkeypatch.setattr(owner, attribute, _counting(counts, name, original))
    monkeypatch.setattr(_libraries, "_LIBRARIES", {})
    early = _torch_library.Torch.early

    def counted_early(*arrays: Any) -> Any:
        carried = early(*arrays)
        counts["carries"] += carried is not None  # None: not carried (requires grad, say)
        return carried

    monkeypatch.setattr(_torch_library.Torch, "early", staticmethod(counted_early))
    current().choices.clear()
    return counts


def _once(counts: Counts, carries: int, detections: int = 1, entries: int = 1) -> None:
    assert counts["checks"] == counts["decisions"] == counts["entries"] == entries, counts
    assert counts["carries"] <= carries * entries, counts
    assert counts["detections"] == detections, counts


def _spec_call(module: Any, **kwargs: Any) -> tuple[Any, Any, Any]:
    data = module.asarray(np.zeros((3, 3), dtype=np.float32), **kwargs)
    indices = module.asarray(np.array([[1, 0, 2], [0, 2, 1]]), **kwargs)
    updates = module.asarray(np.ones((2, 3), dtype=np.float32), **kwargs)
    return data, indices, updates


@pytest.mark.parametrize("operation", ["scatter", "gather"])
def test_numpy(counts: Counts, operation: str) -> None:
    data, indices, updates = _spec_call(np)
    if operation == "scatter":
        scatterx.scatter_elements(data, indices, updates, reduction="add")
    else:
        scatterx.gather_elements(data, indices)
    _once(counts, carries=0, detections=0)  # NumPy arrays: no library to find


def test_out(counts: Counts) -> None:
    data, indices, updates = _spec_call(np)
    scatterx.scatter_elements(data, indices, updates, reduction="add", out=data)
    scatterx.gather_elements(data, indices, out=np.empty_like(updates))
    _once(counts, carries=0, entries=2)


def test_torch_cpu(counts: Counts) -> None:
    torch = pytest.importorskip("torch")
    scatterx.scatter_elements(*_spec_call(torch), reduction="max")
    _once(counts, carries=1)
    out = torch.zeros(3, 3)
    data, indices, updates = _spec_call(torch)
    counts.clear()
    scatterx.scatter_elements(data, indices, updates, out=out)
    _once(counts, carries=1, detections=0)


def test_torch_requiring_grad_forward_and_backward(counts: Counts) -> None:
    torch = pytest.importorskip("torch")
    data, indices, updates = _spec_call(torch)
    updates.requires_grad_(True)
    result = scatterx.scatter_elements(data, indices, updates, reduction="add")
    _once(counts, carries=1)
    counts.clear()
    result.sum().backward()  # d updates = gather(g, indices): one call below the pipeline,
    # made from the forward's checked call: decided and carried once, checked by nothing
    assert counts == Counter(decisions=1, carries=1), counts
    assert updates.grad is not None


def test_jax_eager_and_under_jit(counts: Counts) -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    scatterx.scatter_elements(*_spec_call(jnp), reduction="add")
    _once(counts, carries=1)
    function = jax.jit(lambda d, i, u: scatterx.scatter_elements(d, i, u, reduction="add"))
    args = _spec_call(jnp)
    counts.clear()
    function(*args).block_until_ready()  # checked at trace time, decided by the callback
    _once(counts, carries=0)  # the tracers' type, found once
    counts.clear()
    function(*args).block_until_ready()  # compiled: the callback alone
    assert counts["decisions"] == 1, counts
    assert counts["checks"] == counts["entries"] == counts["carries"] == 0, counts


def test_array_api_strict(counts: Counts) -> None:
    xp = pytest.importorskip("array_api_strict")
    scatterx.scatter_elements(*_spec_call(xp), reduction="min")
    _once(counts, carries=1)
