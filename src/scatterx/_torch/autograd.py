"""PyTorch autograd: calls on tensors that require grad are recorded (contract section 9).

A call whose ``data`` or ``updates`` requires grad, with grad mode on, runs as a
``torch.autograd.Function``: the forward is the ordinary call on the detached tensors
(their own route and device), and the backward is :mod:`scatterx._gradients`'s rules, made of
scatterx calls on the gradient's tensors. Under ``create_graph=True`` those calls are
recorded in turn, so a second derivative works. With grad mode off the tensors are used
detached, as torch's own operations do. The backend choice in force when the call is
recorded (``backend=``, ``use_backend``, ``set_backend``...) holds for its backward too,
which autograd may run on another thread.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from .._check import OPERATIONS
from .._config import Configured
from .._gradients import Calls, Rules, gather_nd_vjp, gather_vjp, scatter_nd_vjp, scatter_vjp
from .._once import Once
from .._request import GatherNDRequest, GatherRequest, Request, ScatterNDRequest, ScatterRequest
from .._run import run
from ..libraries import library_of
from .ops import call
from .rules import FUNCTIONS


def recorded(request: Request, out: Any, choice: Configured) -> Any:
    """The checked call of ``request`` (torch tensors, one of which requires grad):
    recorded by autograd where grad mode is on, else run on the detached tensors, as
    torch's own operations do; by the backend ``choice``, which its backward keeps."""
    import torch

    if out is not None and torch.is_grad_enabled():
        msg = (
            "out= cannot be used where autograd records the call (a tensor requires "
            "grad and grad mode is on): autograd does not see writes into out; use the "
            "tensor the call returns, or call under torch.no_grad()"
        )
        raise TypeError(msg)
    if not torch.is_grad_enabled():
        return run(detached(request), choice, out, request.data)
    function = getattr(_functions(), FUNCTIONS[request.operation])
    return function.apply(request, choice, *request.arrays)


def detached(request: Request) -> Request:
    """``request`` on detached tensors: what the recorded call's forward runs."""
    arrays = tuple(array.detach() for array in request.arrays)
    return request.with_arrays(arrays, request.array_type, request.device)


class TorchCompileWarning(UserWarning):
    """Kept so that filters naming it still work: nothing warns it now.

    ``torch.compile`` met scatterx calls at graph breaks, with this warning; they are
    torch operators now (:mod:`scatterx._torch.ops`), one node of the compiled graph.
    """


def _backward_run(request: Request, choice: Configured) -> Any:
    """The run of a backward's call: through the operators where torch traces it (the
    batched gradients of ``is_grads_batched``), recorded in turn where autograd records it
    (``create_graph=True``), else eager."""
    library = library_of(type(request.data))
    if library is not None and library.traced(request.arrays):  # batched gradients
        operation = OPERATIONS[request.operation]
        reduction = getattr(request, "reduction", None)
        argument = getattr(request, "batch_dims", getattr(request, "axis", None))
        return call(operation, request.arrays, argument, reduction, None, choice)
    if library is not None and library.records(request):
        return recorded(request, None, choice)
    return run(request, choice)


def _rules(calls: Calls) -> Rules:
    """The gradient's operations in torch: ``calls``, recorded in turn under
    ``create_graph=True``."""
    import array_api_compat.torch as xp

    return Rules(
        xp=xp,
        scatter=calls.scatter,
        gather=calls.gather,
        conjugate=True,  # torch's gradients of complex functions are conjugated
        device=lambda array: array.device,
        scatter_nd=calls.scatter_nd,
        gather_nd=calls.gather_nd,
    )


def _define() -> Any:
    import torch

    class Scatter(torch.autograd.Function):
        """scatter_elements, with the gradients of contract section 9."""

        @staticmethod
        def forward(
            ctx: Any,
            request: ScatterRequest,
            choice: Configured,
            data: Any,
            indices: Any,
            updates: Any,
        ) -> Any:
            out = run(detached(request), choice)
            ctx.axis, ctx.reduction, ctx.backend = (
                request.axis,
                request.reduction,
                Calls(choice, request, _backward_run),
            )
            saved = (data, updates, out) if request.reduction in ("mul", "max", "min") else ()
            ctx.save_for_backward(indices, *saved)
            return out

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            indices, *saved = ctx.saved_tensors
            data, updates, out = saved if saved else (None, None, None)
            wanted = (ctx.needs_input_grad[2], ctx.needs_input_grad[4])
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
            return None, None, d_data, None, d_updates

    class Gather(torch.autograd.Function):
        """gather_elements, whose gradient adds ``g`` back in C order."""

        @staticmethod
        def forward(
            ctx: Any, request: GatherRequest, choice: Configured, data: Any, indices: Any
        ) -> Any:
            ctx.axis, ctx.backend, ctx.shape = (
                request.axis,
                Calls(choice, request, _backward_run),
                tuple(data.shape),
            )
            ctx.save_for_backward(indices)
            return run(detached(request), choice)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (indices,) = ctx.saved_tensors
            d_data = gather_vjp(_rules(ctx.backend), g.contiguous(), ctx.shape, indices, ctx.axis)
            return None, None, d_data, None

    class ScatterND(torch.autograd.Function):
        """scatter_nd, with the gradients of ``add`` and ``none``."""

        @staticmethod
        def forward(
            ctx: Any,
            request: ScatterNDRequest,
            choice: Configured,
            data: Any,
            indices: Any,
            updates: Any,
        ) -> Any:
            ctx.reduction, ctx.backend = request.reduction, Calls(choice, request, _backward_run)
            ctx.save_for_backward(indices)
            return run(detached(request), choice)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (indices,) = ctx.saved_tensors
            wanted = (ctx.needs_input_grad[2], ctx.needs_input_grad[4])
            rules = _rules(ctx.backend)
            d_data, d_updates = scatter_nd_vjp(
                rules, g.contiguous(), indices, ctx.reduction, wanted
            )
            return None, None, d_data, None, d_updates

    class GatherND(torch.autograd.Function):
        """gather_nd, whose gradient adds ``g`` back in C order."""

        @staticmethod
        def forward(
            ctx: Any, request: GatherNDRequest, choice: Configured, data: Any, indices: Any
        ) -> Any:
            ctx.batch_dims, ctx.shape = request.batch_dims, tuple(data.shape)
            ctx.backend = Calls(choice, request, _backward_run)
            ctx.save_for_backward(indices)
            return run(detached(request), choice)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (indices,) = ctx.saved_tensors
            rules = _rules(ctx.backend)
            d_data = gather_nd_vjp(rules, g.contiguous(), ctx.shape, indices, ctx.batch_dims)
            return None, None, d_data, None

    return SimpleNamespace(Scatter=Scatter, Gather=Gather, ScatterND=ScatterND, GatherND=GatherND)


#: The autograd Functions, defined on first use (importing scatterx loads no torch).
_functions = Once(_define)
