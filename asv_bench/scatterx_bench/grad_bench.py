"""``python asv_bench/bench.py --grad``: forward + backward on torch CPU tensors, scatterx
against ``torch.scatter_reduce(include_self=True)`` with torch's own autograd.

Two training cases, reduction ``add``: performance.md's embedding-grad case, and message
passing (random edges into nodes, 64 features: each edge's row of indices is its target
node, repeated across the features). A step is the forward call on leaves that require
grad, ``backward`` with a fixed upstream gradient, and the leaves' ``.grad`` cleared. The
backward of both is a gather of the upstream gradient for the updates and the gradient
itself for data (torch: ``gather``; scatterx: its own ``gather_elements``).

The compiled step is the same step with its forward compiled by
``torch.compile(fullgraph=True)`` (AOTAutograd compiles the backward with it; inductor by
default): scatterx's calls are one operator node each (``scatterx::scatter_elements``),
torch's ``scatter_reduce`` is compiled by inductor.
"""

from __future__ import annotations

import statistics
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from .base import BenchCase, Call, require
from .cases import make_case, median_ms

#: The whole step, its forward alone (the backward is their difference), and the step with
#: its forward compiled.
PHASES = ("step", "forward", "compiled")
#: torch.compile's default backend; ``aot_eager`` traces and compiles nothing (quick).
COMPILER = "inductor"
CONTESTANTS = ("scatterx", "torch")
#: The message-passing case at full size: nodes, edges, features.
MESSAGE_PASSING = (50_000, 250_000, 64)


def grad_cases(scale: float = 1.0) -> list[BenchCase]:
    """The embedding-grad and message-passing cases, their first dimensions scaled: NumPy
    float32 data and updates, int64 indices."""
    embedding = make_case("embedding-grad", scale)
    nodes, edges, features = MESSAGE_PASSING
    nodes, edges = max(1, round(nodes * scale)), max(1, round(edges * scale))
    rng = np.random.default_rng(zlib.crc32(b"message-passing"))
    targets = rng.integers(0, nodes, size=(edges, 1), dtype=np.int64)
    messages = BenchCase(
        "message-passing",
        rng.random((nodes, features), dtype=np.float32),
        np.ascontiguousarray(np.broadcast_to(targets, (edges, features))),
        rng.random((edges, features), dtype=np.float32),
        0,
    )
    return [embedding, messages]


def steps(case: BenchCase, contestant: str, compiler: str = COMPILER) -> dict[str, Call]:
    """The step, its forward and the compiled step, on fresh leaves of ``case``."""
    import torch

    import scatterx

    data = torch.from_numpy(case.data.copy()).requires_grad_()
    updates = torch.from_numpy(case.updates.copy()).requires_grad_()
    indices = torch.from_numpy(case.indices)
    upstream = torch.ones_like(data)
    forward: Callable[[], Any]
    if contestant == "scatterx":

        def forward() -> Any:
            return scatterx.scatter_elements(
                data, indices, updates, axis=case.axis, reduction="add"
            )

    else:

        def forward() -> Any:
            return torch.scatter_reduce(data, case.axis, indices, updates, "sum", include_self=True)

    def backward(out: Any) -> None:
        out.backward(upstream)
        data.grad = updates.grad = None

    def step() -> None:
        backward(forward())

    forward_compiled = compiled_forward(contestant, compiler)

    def compiled() -> None:
        backward(forward_compiled(data, indices, updates, case.axis))

    return {"step": step, "forward": forward, "compiled": compiled}


_COMPILED: dict[tuple[str, str], Callable[..., Any]] = {}


def compiled_forward(contestant: str, compiler: str) -> Callable[..., Any]:
    """The forward of ``contestant`` compiled (once: its tensors are its arguments)."""
    found = _COMPILED.get((contestant, compiler))
    if found is None:
        import torch

        found = _COMPILED[contestant, compiler] = torch.compile(
            FORWARDS[contestant], backend=compiler, fullgraph=True
        )
    return found


def _scatterx_add(data: Any, indices: Any, updates: Any, axis: int) -> Any:
    import scatterx

    return scatterx.scatter_elements(data, indices, updates, axis=axis, reduction="add")


def _torch_add(data: Any, indices: Any, updates: Any, axis: int) -> Any:
    import torch

    return torch.scatter_reduce(data, axis, indices, updates, "sum", include_self=True)


#: Each contestant's forward, its tensors as arguments (what the compiled step compiles).
FORWARDS: dict[str, Callable[..., Any]] = {"scatterx": _scatterx_add, "torch": _torch_add}


def time_case(
    case: BenchCase, repeat: int, rounds: int = 2, compiler: str = COMPILER
) -> dict[str, dict[str, float]]:
    """Median ms of each phase of each contestant: blocks of ``repeat`` calls, the
    contestants taking turns block by block for ``rounds`` rounds (the untimed first call
    of the compiled step compiles it)."""
    require("torch")
    samples: dict[str, dict[str, list[float]]] = {c: {p: [] for p in PHASES} for c in CONTESTANTS}
    for _ in range(rounds):
        for contestant in CONTESTANTS:
            calls = steps(case, contestant, compiler)
            for phase in PHASES:
                samples[contestant][phase].append(median_ms(calls[phase], repeat))
    return {
        c: {p: statistics.median(values) for p, values in phases.items()}
        for c, phases in samples.items()
    }


def print_grad(results: dict[str, dict[str, dict[str, float]]], compiler: str = COMPILER) -> None:
    """Lines per case: each contestant's step, forward and backward, and the ratio."""
    head = ["case", "phase", *CONTESTANTS, "torch / scatterx"]
    lines = [head]
    for name, times in results.items():
        for phase in ("step", "forward", "backward", "compiled"):
            ours, theirs = (_phase(times[c], phase) for c in CONTESTANTS)
            lines.append([name, phase, f"{ours:.2f}", f"{theirs:.2f}", f"{theirs / ours:.2f}x"])
    widths = [max(len(line[k]) for line in lines) for k in range(len(head))]
    for line in lines:
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))
    print(
        "median ms on torch CPU tensors, reduction add; step = forward + backward "
        "(torch: scatter_reduce(include_self=True) and its autograd); backward = step - forward; "
        f"compiled = the step, its forward by torch.compile(fullgraph=True, backend={compiler!r})"
    )


def _phase(times: dict[str, float], phase: str) -> float:
    return times["step"] - times["forward"] if phase == "backward" else times[phase]
