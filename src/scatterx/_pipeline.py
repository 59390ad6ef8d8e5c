"""The front-end as one pipeline: ``call(operation, ...)`` for every operation and mode.

A call goes down once: the NumPy fast lane, or adopt (:mod:`scatterx._adopt`) -> check
(:mod:`scatterx._check`) -> the mode: a torch operator (where torch traces), a JAX trace,
autograd, or the eager run (:mod:`scatterx._run`), which decides the plan and hands the
result back. The public functions are entered once per user call and the check runs once:
what a host runs later (an operator's body, a backward, a vmap callback, a Dask block)
enters below, at :mod:`scatterx._run`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._adopt import adopt
from ._check import GATHER, GATHER_ND, SCATTER, SCATTER_ND, Operation, check
from ._check.out import settled
from ._config import configured
from ._jax import trace as _jax
from ._plan import Decision, Plan, decide, decide_for_blocks, explain_plan
from ._request import Request
from ._run import execute, run, run_carried
from ._torch import autograd as _autograd
from ._torch import ops as _torch_ops
from .libraries import library_of
from .libraries.base import TRACED
from .libraries.torch import compiling, is_tensor

__all__ = ["GATHER", "GATHER_ND", "SCATTER", "SCATTER_ND", "block", "call", "explain"]


def call(
    operation: Operation, arrays: tuple[Any, ...], axis: Any, reduction: Any, out: Any, backend: Any
) -> Any:
    """The pipeline of :func:`scatterx.scatter_elements` and :func:`scatterx.gather_elements`."""
    data = arrays[0]
    if type(data) is np.ndarray and (out is None or (out is data and operation is SCATTER)):
        # NumPy's fast lane: indices and updates join data, or are refused by the check.
        request = check(operation, arrays, axis, reduction, out)
        if out is not None:
            return run(request, configured(backend), out, data)
        chosen, route, request = decide(request, configured(backend))
        if route is None:  # a backend of NumPy arrays: its result is the caller's
            if operation is SCATTER:
                return chosen.scatter_elements(request)  # type: ignore[arg-type]
            return getattr(chosen, operation.name)(request)
        return execute(Plan((chosen, route, request)), data)
    if _compiled(data) or (out is not None and _traced(out, arrays)):
        return _torch_ops.call(operation, arrays, axis, reduction, out, backend)
    choice = configured(backend)
    adopted = adopt(arrays, out)
    if adopted.carried is not None:  # CPU tensors' NumPy views: eager, the small call's way
        return run_carried(operation, adopted.arrays, adopted.carried, axis, reduction, choice)
    library = adopted.library
    if out is None and library is not None and library.traced(arrays):
        return _torch_ops.call(operation, arrays, axis, reduction, out, backend)
    request = check(operation, arrays, axis, reduction, out)
    if request.device is TRACED:
        return _jax.traced(request, choice)
    if library is not None and library.records(request):
        result = _autograd.recorded(request, out, choice)
    else:
        result = run(request, choice, out, data)
    if out is not None and library is not None:
        library.wrote(out)  # written, and no error raised
    return result


def _compiled(data: Any) -> bool:
    """Whether ``torch.compile`` traces a call of tensors (its operators take it; a call of
    other arrays inside a compiled function runs as it does eagerly)."""
    return compiling() and is_tensor(data)


def _traced(out: Any, arrays: tuple[Any, ...]) -> bool:
    """Whether an ``out=`` call is traced by its library (torch's tracers: its operators)."""
    library = library_of(type(out))
    return library is not None and library.traced((*arrays, out))


def explain(
    operation: Operation, arrays: tuple[Any, ...], axis: Any, reduction: Any, out: Any, backend: Any
) -> Decision:
    """The pipeline of :func:`scatterx.explain` and :func:`scatterx.explain_gather`: the
    Decision that :func:`call` would make; runs nothing."""
    adopted = adopt(arrays, out)
    request = check(operation, adopted.arrays, axis, reduction, out)
    if out is not None:  # checked as the call checks it, out's memory too
        request = settled(request)
    if request.device is TRACED:
        return _jax.explain_traced(request, backend)
    library = adopted.library
    if adopted.carried is None and library is not None and library.records(request):
        request = _autograd.detached(request)  # the forward runs on the detached tensors
    return explain_plan(request, backend, adopted.carried)


def block(
    operation: Operation, arrays: tuple[Any, ...], axis: int, reduction: Any = None
) -> tuple[str, Callable[[], Any]]:
    """See :func:`scatterx.backend.block_call`: the backend that runs an in-memory call a
    backend of chunked arrays makes from a task, and the run."""
    request: Request = check(operation, arrays, axis, reduction)
    plan = decide_for_blocks(request)
    return plan.backend.name, lambda: execute(plan, arrays[0])
