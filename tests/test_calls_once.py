"""One user call enters the public function once and checks its inputs once (issue 43).

A host (torch's autograd backward, an operator's body, JAX's vmap callback and gradient)
is handed the checked call and enters below the public functions: a backward, a vmap or a
``jax.grad`` reuses the forward's checked call and checks nothing again. Counted with
``sys.setprofile`` in every thread that runs Python (``threading.setprofile`` for the
threads that start while it counts; XLA runs its callbacks on the calling thread here, which
the NumPy check below proves by counting the callback's own run).
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx import _api, _check, _run

#: The code objects counted, by name.
_WATCHED = {
    "public": {
        function.__code__
        for function in (
            _api.scatter_elements,
            _api.gather_elements,
            _api.scatter_nd,
            _api.gather_nd,
        )
    },
    "check": {_check.check.__code__},
    "run": {_run.run.__code__, _run.run_carried.__code__, _run.execute.__code__},
}


@contextmanager
def _counting() -> Iterator[Counter[str]]:
    counts: Counter[str] = Counter()
    codes = {code: name for name, group in _WATCHED.items() for code in group}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            name = codes.get(frame.f_code)
            if name is not None:
                counts[name] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield counts
    finally:
        sys.setprofile(previous)
        threading.setprofile(None)  # type: ignore[arg-type]


def _once(call: Callable[[], Any]) -> Counter[str]:
    call()  # first use: imports, definitions, compilation out of the count
    with _counting() as counts:
        call()
    return counts


def _call() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = np.arange(12, dtype=np.float64).reshape(3, 4)
    indices = np.array([[2, 0, 1, 2], [0, 0, 2, 1]])
    updates = np.arange(8, dtype=np.float64).reshape(2, 4) + 0.5
    return data, indices, updates


def test_a_numpy_call_is_checked_once() -> None:
    data, indices, updates = _call()
    counts = _once(lambda: scatterx.scatter_elements(data, indices, updates, reduction="add"))
    assert (counts["public"], counts["check"]) == (1, 1)
    counts = _once(lambda: scatterx.gather_elements(data, indices))
    assert (counts["public"], counts["check"]) == (1, 1)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_a_torch_forward_and_backward_check_once(reduction: str) -> None:
    torch = pytest.importorskip("torch")
    arrays = [torch.from_numpy(a) for a in _call()]
    data, updates = arrays[0].requires_grad_(), arrays[2].requires_grad_()

    def forward_and_backward() -> None:
        scattered = scatterx.scatter_elements(data, arrays[1], updates, reduction=reduction)
        gathered = scatterx.gather_elements(scattered, arrays[1])
        gathered.sum().backward()

    counts = _once(forward_and_backward)
    assert counts["public"] == 2  # the two calls written above
    assert counts["check"] == 2  # their forward; the backward's calls are below them
    assert counts["run"] >= 4  # each forward, and at least one call of each backward


def test_a_compiled_call_is_checked_once_per_call() -> None:
    torch = pytest.importorskip("torch")
    data, indices, updates = (torch.from_numpy(a) for a in _call())

    def both(d: Any) -> Any:
        return scatterx.gather_elements(scatterx.scatter_elements(d, indices, updates), indices)

    compiled = torch.compile(both, backend="eager", fullgraph=True)
    counts = _once(lambda: compiled(data))
    # The traced public calls run at trace time only; each operator's body checks its
    # new tensors once per call of the compiled function.
    assert counts["public"] == 0
    assert counts["check"] == 2
    with _counting() as counts:
        torch.compile(both, backend="eager", fullgraph=True, dynamic=True)(data.repeat(1, 2))
    assert counts["public"] <= 2  # dynamo traces the two calls (not always as Python calls)
    assert counts["check"] == 2  # the bodies: tracing checked nothing with `check`


def test_jax_vmap_checks_once() -> None:
    jax = pytest.importorskip("jax")
    data, indices, updates = (jax.numpy.asarray(a) for a in _call())
    batch = jax.numpy.stack([data, data + 1, data * 2])

    def scatter(d: Any) -> Any:
        return scatterx.scatter_elements(d, indices, updates, reduction="max")

    counts = _once(lambda: jax.block_until_ready(jax.vmap(scatter)(batch)))
    assert counts["public"] == 1
    assert counts["check"] == 1  # at trace time; the batch's run derives its request
    assert counts["run"] >= 1  # the run of the batch, counted: it ran on this thread


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max"])
def test_jax_grad_checks_once(reduction: str) -> None:
    jax = pytest.importorskip("jax")
    data, indices, updates = (jax.numpy.asarray(a) for a in _call())

    def loss(d: Any, u: Any) -> Any:
        return scatterx.scatter_elements(d, indices, u, reduction=reduction).sum()

    counts = _once(lambda: jax.block_until_ready(jax.grad(loss, (0, 1))(data, updates)))
    assert counts["public"] == 1
    assert counts["check"] == 1


# ScatterND and GatherND: the same hosts, the same one check per call -----------------------


def _nd_call() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A (4, 3) table, rows of it (one twice), a slice of updates per row."""
    data = np.arange(12, dtype=np.float64).reshape(4, 3)
    rows = np.array([[2], [0], [2]])
    return data, rows, np.arange(9, dtype=np.float64).reshape(3, 3) + 0.5


def _nd_both(indices: Any, updates: Any) -> Callable[[Any], Any]:
    def both(d: Any) -> Any:
        scattered = scatterx.scatter_nd(d, indices, updates, reduction="add")
        return scatterx.gather_nd(scattered, indices).sum()

    return both


def test_a_numpy_nd_call_is_checked_once() -> None:
    data, rows, updates = _nd_call()
    counts = _once(lambda: scatterx.scatter_nd(data, rows, updates, reduction="add"))
    assert (counts["public"], counts["check"]) == (1, 1)
    counts = _once(lambda: scatterx.gather_nd(data, rows))
    assert (counts["public"], counts["check"]) == (1, 1)


def test_a_torch_nd_forward_and_backward_check_once() -> None:
    torch = pytest.importorskip("torch")
    data, rows, updates = (torch.from_numpy(a) for a in _nd_call())
    both = _nd_both(rows, updates.requires_grad_())
    counts = _once(lambda: both(data.requires_grad_()).backward())
    assert counts["public"] == 2
    assert counts["check"] == 2
    assert counts["run"] >= 4


def test_a_compiled_nd_call_is_checked_once_per_call() -> None:
    torch = pytest.importorskip("torch")
    data, rows, updates = (torch.from_numpy(a) for a in _nd_call())
    compiled = torch.compile(_nd_both(rows, updates), backend="eager", fullgraph=True)
    counts = _once(lambda: compiled(data))
    assert counts["public"] == 0
    assert counts["check"] == 2


@pytest.mark.parametrize("transform", ["jit", "vmap", "grad"])
def test_a_jax_nd_call_is_checked_once(transform: str) -> None:
    jax = pytest.importorskip("jax")
    data, rows, updates = (jax.numpy.asarray(a) for a in _nd_call())
    both = _nd_both(rows, updates)
    run = {
        "jit": lambda: jax.jit(both)(data),
        "vmap": lambda: jax.vmap(both)(jax.numpy.stack([data, data * 2])),
        "grad": lambda: jax.grad(both)(data),
    }[transform]
    counts = _once(lambda: jax.block_until_ready(run()))
    if transform == "jit":  # compiled once: a call runs the compiled function
        assert (counts["public"], counts["check"]) == (0, 0)
        return
    assert counts["public"] == 2  # the two calls written above
    assert counts["check"] == 2  # their own: a batch or a gradient derives its requests
    if transform == "vmap":  # each call's batch in one run (and its execute), not one each
        assert 2 <= counts["run"] <= 4
