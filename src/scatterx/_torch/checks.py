"""The eager call's checks, on the tensors that an exporter holds (contract sections 4, 7).

An exported graph never runs scatterx: the call's checks run as the graph is made, on its
example tensors (real under TorchScript, fake under ``torch.export``), with the eager
call's errors. Shapes are compared as the exporter holds them (a dynamic dimension is a
symbol, equal to itself without a guard); memory is told by the tensors torch views,
which a fake tensor keeps too.
"""

from __future__ import annotations

from typing import Any

from .._check import GATHER, GATHER_ND, Operation
from .._check.out import check_out

Tensor = Any


def check_exported(
    operation: Operation, arrays: tuple[Tensor, ...], axis: Any, out: Tensor | None
) -> None:
    """Raise the eager call's error for shapes that do not fit, and for an ``out`` of
    another shape, dtype or device, or one that shares memory with an input other than
    the ``data`` it updates in place."""
    shapes = tuple(tuple(array.shape) for array in arrays)
    operation.shapes(shapes, axis)
    if out is None:
        return
    shape = result_shape(operation, shapes, axis)
    check_out(out, arrays[0], shape, operation.result)
    _refuse_overlap(operation, dict(zip(operation.roles, arrays, strict=True)), out)


def result_shape(operation: Operation, shapes: tuple[Any, ...], argument: Any) -> tuple[Any, ...]:
    """The shape of the operation's result, from its arrays' shapes and its integer
    argument (a GatherND's ``batch_dims``)."""
    if operation is GATHER_ND:
        indices = shapes[1]
        return (*indices[:-1], *shapes[0][argument + indices[-1] :])
    return tuple(shapes[1] if operation is GATHER else shapes[0])


def _viewed(tensor: Tensor) -> Tensor:
    """The tensor whose memory ``tensor`` views (itself where it views none)."""
    base = tensor._base  # public since views were documented: "t._base is base"
    return tensor if base is None else base


def _refuse_overlap(operation: Operation, roles: dict[str, Tensor], out: Tensor) -> None:
    """The ValueError of :func:`scatterx._check.out.settled` where ``out`` and an input
    view one tensor (which may share no element: what the eager call proves, an export
    cannot, and refuses)."""
    data = roles["data"]
    in_place = operation is not GATHER and (out is data or out.is_set_to(data))
    memory = _viewed(out)
    for role, array in roles.items():
        if (role == "data" and in_place) or _viewed(array) is not memory:
            continue
        msg = (
            f"out overlaps {role}: scatterx would read what it has written; "
            + ("pass out=data to update data in place, or " if role == "data" else "")
            + "pass an array of its own"
        )
        raise ValueError(msg)
