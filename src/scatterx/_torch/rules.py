"""The rules of scatterx's torch operators: gradients, batching, and torch.func's Functions.

The gradients are :mod:`scatterx._gradients`'s, made of the operators themselves (a second
derivative, and a compiled backward, go through them again); a ``torch.func.vmap`` batch
is one call along the axis after the batch's, the batch in front. Under a ``torch.func``
transform the operators go through autograd Functions with the same rules, since the
autograd of ``register_autograd`` has no ``setup_context`` there (pytorch#168393).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple

from .._gradients import (
    Rules,
    fold_batch,
    gather_nd_vjp,
    gather_vjp,
    scatter_nd_vjp,
    scatter_vjp,
)
from .._once import Once

if TYPE_CHECKING:
    import torch

Tensor = Any


class Operators(NamedTuple):
    """The operators' ``torch.ops`` overloads (a named tuple: dynamo traces its making)."""

    scatter: Any
    gather: Any
    scatter_out: Any
    gather_out: Any
    scatter_nd: Any
    gather_nd: Any
    scatter_nd_out: Any
    gather_nd_out: Any


#: Each operation's operator, then its ``out=`` form, by the field names of
#: :class:`Operators`.
FIELDS = {
    "scatter_elements": ("scatter", "scatter_out"),
    "gather_elements": ("gather", "gather_out"),
    "scatter_nd": ("scatter_nd", "scatter_nd_out"),
    "gather_nd": ("gather_nd", "gather_nd_out"),
}


def overloads() -> Operators:
    """The operators' overloads (defined by :mod:`scatterx._torch.ops`, which has imported
    torch whole by then: no half-imported module is found here; dynamo traces the look-up)."""
    found = sys.modules["torch"].ops.scatterx
    return Operators(
        found.scatter_elements.default,
        found.gather_elements.default,
        found.scatter_elements_out.default,
        found.gather_elements_out.default,
        found.scatter_nd.default,
        found.gather_nd.default,
        found.scatter_nd_out.default,
        found.gather_nd_out.default,
    )


def _rules(backend: str | None, transformed: bool = False) -> Rules:
    """The gradient's operations: these operators (under a ``torch.func`` transform, their
    autograd Functions), with the backend named for the call."""
    import array_api_compat.torch as xp

    ops = functions() if transformed else None
    found = overloads()
    scatter_op = ops.Scatter.apply if ops else found.scatter
    gather_op = ops.Gather.apply if ops else found.gather
    scatter_nd_op = ops.ScatterND.apply if ops else found.scatter_nd
    gather_nd_op = ops.GatherND.apply if ops else found.gather_nd

    def scatter(
        data: Tensor, indices: Tensor, updates: Tensor, *, axis: int, reduction: str
    ) -> Tensor:
        return scatter_op(data, indices, updates, axis, reduction, backend)

    def gather(data: Tensor, indices: Tensor, *, axis: int) -> Tensor:
        return gather_op(data, indices, axis, backend)

    def scatter_nd(data: Tensor, indices: Tensor, updates: Tensor, *, reduction: str) -> Tensor:
        return scatter_nd_op(data, indices, updates, reduction, backend)

    def gather_nd(data: Tensor, indices: Tensor, *, batch_dims: int) -> Tensor:
        return gather_nd_op(data, indices, batch_dims, backend)

    return Rules(xp, scatter, gather, True, lambda a: a.device, scatter_nd, gather_nd)


def scatter_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    data, indices, updates, axis, reduction, backend = inputs
    ctx.axis, ctx.reduction, ctx.backend = axis_from_front(axis, data.dim()), reduction, backend
    saved = (data, updates, output) if reduction in ("mul", "max", "min") else ()
    ctx.save_for_backward(indices, *saved)


def scatter_backward(ctx: Any, g: Tensor, transformed: bool = False) -> tuple[Any, ...]:
    indices, *saved = ctx.saved_tensors
    data, updates, out = saved if saved else (None, None, None)
    wanted = (ctx.needs_input_grad[0], ctx.needs_input_grad[2])
    rules = _rules(ctx.backend, transformed)
    d_data, d_updates = scatter_vjp(
        rules, g.contiguous(), data, indices, updates, out, ctx.axis, ctx.reduction, wanted
    )
    return d_data, None, d_updates, None, None, None


def gather_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    data, indices, axis, backend = inputs
    ctx.axis, ctx.backend, ctx.shape = axis_from_front(axis, data.dim()), backend, tuple(data.shape)
    ctx.save_for_backward(indices)


def gather_backward(ctx: Any, g: Tensor, transformed: bool = False) -> tuple[Any, ...]:
    (indices,) = ctx.saved_tensors
    rules = _rules(ctx.backend, transformed)
    d_data = gather_vjp(rules, g.contiguous(), ctx.shape, indices, ctx.axis)
    return d_data, None, None, None


def scatter_nd_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    ctx.reduction, ctx.backend = inputs[3], inputs[4]
    ctx.save_for_backward(inputs[1])


def scatter_nd_backward(ctx: Any, g: Tensor, transformed: bool = False) -> tuple[Any, ...]:
    (indices,) = ctx.saved_tensors
    wanted = (ctx.needs_input_grad[0], ctx.needs_input_grad[2])
    rules = _rules(ctx.backend, transformed)
    d_data, d_updates = scatter_nd_vjp(rules, g.contiguous(), indices, ctx.reduction, wanted)
    return d_data, None, d_updates, None, None


def gather_nd_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    data, indices, ctx.batch_dims, ctx.backend = inputs
    ctx.shape = tuple(data.shape)
    ctx.save_for_backward(indices)


def gather_nd_backward(ctx: Any, g: Tensor, transformed: bool = False) -> tuple[Any, ...]:
    (indices,) = ctx.saved_tensors
    rules = _rules(ctx.backend, transformed)
    d_data = gather_nd_vjp(rules, g.contiguous(), ctx.shape, indices, ctx.batch_dims)
    return d_data, None, None, None


def axis_from_front(axis: int, rank: int) -> int:
    """``axis`` counted from the front (one out of range is left for the run to refuse)."""
    return axis + rank if -rank <= axis < 0 else axis


def _shifted(axis: int, rank: int) -> int:
    """The axis of a batched call: after the batch's, in front (refused out of range as the
    call itself would be, for the rank the caller sees)."""
    if not -rank <= axis < rank:
        msg = f"axis must be in [{-rank}, {rank - 1}] for data of rank {rank}; got axis={axis}"
        raise ValueError(msg)
    return axis % rank + 1


def _front(tensor: Tensor, dim: int | None, size: int) -> Tensor:
    """``tensor`` with vmap's batch dimension first (broadcast where it has none)."""
    if dim is None:
        return tensor.unsqueeze(0).expand(size, *tensor.shape)
    return tensor.movedim(dim, 0)


def scatter_vmap(info: Any, in_dims: tuple[Any, ...], *inputs: Any) -> tuple[Tensor, int]:
    """A batch of scatters is one scatter along the axis after the batch's, kept in front."""
    axis, reduction, backend = inputs[3:]
    batched = [_front(t, d, info.batch_size) for t, d in zip(inputs[:3], in_dims[:3], strict=True)]
    shifted = _shifted(axis, batched[0].dim() - 1)
    return _call(info, "Scatter", "scatter")(*batched, shifted, reduction, backend), 0


def gather_vmap(info: Any, in_dims: tuple[Any, ...], *inputs: Any) -> tuple[Tensor, int]:
    """A batch of gathers is one gather along the axis after the batch's."""
    axis, backend = inputs[2:]
    batched = [_front(t, d, info.batch_size) for t, d in zip(inputs[:2], in_dims[:2], strict=True)]
    shifted = _shifted(axis, batched[0].dim() - 1)
    return _call(info, "Gather", "gather")(*batched, shifted, backend), 0


def scatter_nd_vmap(info: Any, in_dims: tuple[Any, ...], *inputs: Any) -> tuple[Tensor, int]:
    """A batch of ScatterNDs is one, each row of indices led by its batch's position."""
    import array_api_compat.torch as xp

    reduction, backend = inputs[3:]
    data, indices, updates = (
        _front(t, d, info.batch_size) for t, d in zip(inputs[:3], in_dims[:3], strict=True)
    )
    led = fold_batch(xp, indices, 1, indices.device)
    return _call(info, "ScatterND", "scatter_nd")(data, led, updates, reduction, backend), 0


def gather_nd_vmap(info: Any, in_dims: tuple[Any, ...], *inputs: Any) -> tuple[Tensor, int]:
    """A batch of GatherNDs is one whose batch has one more dimension, in front."""
    batch_dims, backend = inputs[2:]
    batched = [_front(t, d, info.batch_size) for t, d in zip(inputs[:2], in_dims[:2], strict=True)]
    return _call(info, "GatherND", "gather_nd")(*batched, batch_dims + 1, backend), 0


def refuse_out_vmap(info: Any, in_dims: tuple[Any, ...], *inputs: Any) -> Any:
    msg = (
        "scatterx's out= cannot be used under torch.func.vmap (a batch cannot be written "
        "into one out): call without out= and use the tensor the call returns"
    )
    raise RuntimeError(msg)


def _call(info: Any, function: str, operator: str) -> Callable[..., Tensor]:
    """The batched call of a vmap rule: the autograd Function's where it runs one."""
    if getattr(info, "function", False):
        return getattr(functions(), function).apply  # type: ignore[no-any-return]
    return getattr(overloads(), operator)  # type: ignore[no-any-return]


def _define_functions() -> Any:
    ops = overloads()
    return SimpleNamespace(
        **{
            name: _function(name, getattr(ops, FIELDS[operation][0]), *RULES[operation])
            for operation, name in FUNCTIONS.items()
        }
    )


#: The autograd Function of each operation under a ``torch.func`` transform.
FUNCTIONS = {
    "scatter_elements": "Scatter",
    "gather_elements": "Gather",
    "scatter_nd": "ScatterND",
    "gather_nd": "GatherND",
}


def _function(
    name: str, op: Any, context: Any, backward: Any, vmap: Any
) -> type[torch.autograd.Function]:
    """The autograd Function of one operator for ``torch.func``: the op's forward, its
    gradient and batching rules, and forward mode refused."""
    import torch

    def forward(*inputs: Any) -> Any:
        return op(*inputs)

    def transformed_backward(ctx: Any, g: Any) -> Any:
        return backward(ctx, g, transformed=True)

    def marked_vmap(info: Any, in_dims: tuple[Any, ...], *inputs: Any) -> Any:
        return vmap(_Marked(info), in_dims, *inputs)

    members = {
        "__doc__": f"``{op}`` for ``torch.func``.",
        "forward": staticmethod(forward),
        "setup_context": staticmethod(context),
        "backward": staticmethod(transformed_backward),
        "vmap": staticmethod(marked_vmap),
        "jvp": staticmethod(_refuse_forward_mode),
    }
    return type(name, (torch.autograd.Function,), members)


#: The error of every forward-mode derivative of a scatterx call.
NO_FORWARD_MODE = (
    "scatterx has no forward-mode derivative (torch.func.jvp, jacfwd, hessian, "
    "torch.autograd.forward_ad): use reverse mode, torch.func.jacrev, or "
    "jacrev(jacrev(f)) for a second derivative"
)


def _refuse_forward_mode(ctx: Any, *tangents: Any) -> Any:
    raise NotImplementedError(NO_FORWARD_MODE)


class _Marked:
    """vmap's ``info``, marked as the autograd Function's (its batched call is one too)."""

    function = True

    def __init__(self, info: Any) -> None:
        self.batch_size = info.batch_size


#: The operators as autograd Functions that ``torch.func`` can transform (defined on first
#: use): the same forward, gradients and batching rules.
functions = Once(_define_functions)


#: Each operation's autograd context, backward and vmap rule.
RULES = {
    "scatter_elements": (scatter_context, scatter_backward, scatter_vmap),
    "gather_elements": (gather_context, gather_backward, gather_vmap),
    "scatter_nd": (scatter_nd_context, scatter_nd_backward, scatter_nd_vmap),
    "gather_nd": (gather_nd_context, gather_nd_backward, gather_nd_vmap),
}
