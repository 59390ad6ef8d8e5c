"""PyTorch autograd: calls on tensors that require grad are recorded (contract section 9).

A call whose ``data`` or ``updates`` requires grad, with grad mode on, runs as a
``torch.autograd.Function``: the forward is the ordinary call on the detached tensors
(their own route and device), and the backward is :mod:`scatterx._grad`'s rules, made of
scatterx calls on the gradient's tensors. Under ``create_graph=True`` those calls are
recorded in turn, so a second derivative works. With grad mode off the tensors are used
detached, as torch's own operations do. The backend choice in force when the call is
recorded (``backend=``, ``use_backend``, ``set_backend``...) holds for its backward too,
which autograd may run on another thread.
"""

from __future__ import annotations

import sys
import warnings
from functools import partial
from types import SimpleNamespace
from typing import Any

from ._grad import Rules, gather_vjp, scatter_vjp
from ._request import GatherRequest, Request, ScatterRequest
from ._select import _configured

TORCH = "torch:"


def records(request: Request) -> bool:
    """Whether ``request`` is a torch call with a tensor that requires grad."""
    if not request.array_type.startswith(TORCH):  # torch:Tensor, torch:Parameter...
        return False
    if isinstance(request, GatherRequest):
        return bool(request.data.requires_grad)
    return bool(request.data.requires_grad or request.updates.requires_grad)


def grad_enabled() -> bool:
    """Whether torch's grad mode is on (in this thread)."""
    import torch

    return bool(torch.is_grad_enabled())


def detached(request: Request) -> Request:
    """``request`` on detached tensors: what the recorded call's forward runs."""
    arrays = tuple(array.detach() for array in request.arrays)
    return request.with_arrays(arrays, request.array_type, request.device)


def scatter(request: ScatterRequest, backend: Any) -> Any:
    """The scatter of ``request``, recorded by autograd where grad mode is on."""
    import torch

    if not torch.is_grad_enabled():
        data, updates = request.data.detach(), request.updates.detach()
        return _scatter(data, request.indices, updates, request.axis, request.reduction, backend)
    names, _ = _configured(backend)
    return _functions().Scatter.apply(
        request.data, request.indices, request.updates, request.axis, request.reduction, names
    )


def gather(request: GatherRequest, backend: Any) -> Any:
    """The gather of ``request``, recorded by autograd where grad mode is on."""
    import torch

    if not torch.is_grad_enabled():
        return _gather(request.data.detach(), request.indices, request.axis, backend)
    names, _ = _configured(backend)
    return _functions().Gather.apply(request.data, request.indices, request.axis, names)


def compiling() -> bool:
    """Whether ``torch.compile`` is tracing the call now.

    Nothing here may make dynamo break the graph (it would then run this check eagerly,
    and be told no): no look at the arrays, no import.
    """
    torch = sys.modules.get("torch")
    return torch is not None and bool(torch.compiler.is_compiling())


def eager(function: Any) -> Any:
    """``function`` to be run eagerly at a graph break of ``torch.compile``, with a warning.

    Tracing scatterx would compile its NumPy code into the graph (torch.compile traces
    NumPy) and lose the gradient; its kernels are not torch operations a graph can hold.
    """
    import torch

    # The user's line: eager <- scatterx's routed call <- scatter_elements <- the caller.
    warnings.warn(COMPILE_WARNING, TorchCompileWarning, stacklevel=4)
    return torch.compiler.disable(function)  # type: ignore[no-untyped-call]


class TorchCompileWarning(UserWarning):
    """A scatterx call met by ``torch.compile``: it runs eagerly, between compiled graphs.

    Python's default filter shows it once per line of the caller's code; filter it with
    ``warnings.filterwarnings("ignore", category=scatterx.TorchCompileWarning)``.
    """


COMPILE_WARNING = (
    "torch.compile does not trace scatterx: each scatterx call runs eagerly at a graph "
    "break (the code around it is compiled), and autograd records it as usual"
)


def _scatter(data: Any, indices: Any, updates: Any, axis: int, reduction: str, backend: Any) -> Any:
    import scatterx

    return scatterx.scatter_elements(
        data, indices, updates, axis=axis, reduction=reduction, backend=backend
    )


def _gather(data: Any, indices: Any, axis: int, backend: Any) -> Any:
    import scatterx

    return scatterx.gather_elements(data, indices, axis=axis, backend=backend)


def _rules(backend: Any) -> Rules:
    import array_api_compat.torch as xp

    import scatterx

    return Rules(
        xp=xp,
        scatter=partial(scatterx.scatter_elements, backend=backend),
        gather=partial(scatterx.gather_elements, backend=backend),
        conjugate=True,  # torch's gradients of complex functions are conjugated
        device=lambda array: array.device,
    )


_FUNCTIONS: Any = None


def _functions() -> Any:
    """The autograd Functions, defined on first use (importing scatterx loads no torch)."""
    global _FUNCTIONS
    if _FUNCTIONS is None:
        _FUNCTIONS = _define()
    return _FUNCTIONS


def _define() -> Any:
    import torch

    class Scatter(torch.autograd.Function):
        """scatter_elements, with the gradients of contract section 9."""

        @staticmethod
        def forward(
            ctx: Any, data: Any, indices: Any, updates: Any, axis: int, reduction: str, backend: Any
        ) -> Any:
            out = _scatter(data.detach(), indices, updates.detach(), axis, reduction, backend)
            ctx.axis, ctx.reduction, ctx.backend = axis, reduction, backend
            saved = (data, updates, out) if reduction in ("mul", "max", "min") else ()
            ctx.save_for_backward(indices, *saved)
            return out

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            indices, *saved = ctx.saved_tensors
            data, updates, out = saved if saved else (None, None, None)
            wanted = (ctx.needs_input_grad[0], ctx.needs_input_grad[2])
            d_data, d_updates = scatter_vjp(
                _rules(ctx.backend),
                g.contiguous(),
                data,
                indices,
                updates,
                out,
                ctx.axis,
                ctx.reduction,
                wanted,
            )
            return d_data, None, d_updates, None, None, None

    class Gather(torch.autograd.Function):
        """gather_elements, whose gradient adds ``g`` back in C order."""

        @staticmethod
        def forward(ctx: Any, data: Any, indices: Any, axis: int, backend: Any) -> Any:
            ctx.axis, ctx.backend, ctx.shape = axis, backend, tuple(data.shape)
            ctx.save_for_backward(indices)
            return _gather(data.detach(), indices, axis, backend)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (indices,) = ctx.saved_tensors
            d_data = gather_vjp(_rules(ctx.backend), g.contiguous(), ctx.shape, indices, ctx.axis)
            return d_data, None, None, None

    return SimpleNamespace(Scatter=Scatter, Gather=Gather)
