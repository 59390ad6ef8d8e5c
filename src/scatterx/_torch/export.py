"""Exported graphs of scatterx's torch calls: ``torch.export`` and both ONNX exporters.

A graph that leaves torch holds each call as one node that its consumer knows:

- ``torch.onnx.export(..., dynamo=True)``: the standard ONNX node itself, made with
  ``torch.onnx.ops.symbolic`` (ScatterElements of opset 18, GatherElements of 13);
- ``torch.onnx.export(..., dynamo=False)``, which traces with TorchScript: the functional
  operator, turned into the same node by the symbolic functions registered here;
- ``torch.export.export``: the functional operator, which
  :func:`scatterx.onnx.torch_translations` turns into the node later.

An ``out=`` call is the functional node and a write of its result into ``out``, which
every exporter understands as a new value of ``out``: the operators' ``_out`` forms return
nothing, and an exporter that keeps only what a graph returns would drop them, and the
write with them.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from .._check import OPERATIONS, Operation
from .checks import check_exported, result_shape

Tensor = Any


class Node(NamedTuple):
    """The ONNX node of one operation."""

    op_type: str
    version: int  # the one the dynamo exporter's node names
    setting: str | None  # the attribute of the integer argument
    opsets: dict[str, int]  # the first opset of each reduction ("none": of the node)


_REDUCTIONS = {"none": 11, "add": 16, "mul": 16, "max": 18, "min": 18}
NODES = {
    "scatter_elements": Node("ScatterElements", 18, "axis", _REDUCTIONS),
    "gather_elements": Node("GatherElements", 13, "axis", {"none": 11}),
    "scatter_nd": Node("ScatterND", 18, None, _REDUCTIONS),
    "gather_nd": Node("GatherND", 13, "batch_dims", {"none": 11}),
}

_registered = False
_registering = threading.Lock()


def exported(
    operation: Operation,
    arrays: tuple[Tensor, ...],
    axis: Any,
    reduction: Any,
    out: Tensor | None,
    functional: Any,
) -> Tensor | None:
    """The call as an exported graph holds it, or None where no graph is exported.

    ``functional``: the functional operator's overload (:func:`scatterx._torch.ops.call`
    passes it with the backend bound). The eager call's checks of shapes and of ``out``
    run first, on the tensors as the exporter holds them: an export never holds a call
    that the eager call refuses. A ``torch.jit.trace`` outside any export records the same
    graph as the TorchScript exporter, so that the module it makes exports later.
    """
    torch = sys.modules["torch"]
    to_onnx = _in_onnx_export()
    scripting = torch.jit.is_tracing()  # torch.jit.trace, or the TorchScript exporter
    if not (to_onnx or scripting or torch.compiler.is_exporting()):
        return None
    check_exported(operation, arrays, axis, out)
    if scripting and out is not None and out._base is not None:
        raise ValueError(_SCRIPTED_VIEW)
    if to_onnx and not scripting:
        result = _symbolic(torch, operation, arrays, axis, reduction)
    else:
        if scripting:
            _register_script_symbolics()
        result = functional()
    if out is None:
        return result
    if scripting:
        # TorchScript's exporter turns an index assignment of a whole tensor into the new
        # value that the rest of the graph reads; it has no translation of its ``copy_``.
        out[:] = result
    else:
        out.copy_(result)
    return out


# TorchScript's ONNX exporter loses a write into a view made before the write (torch's own
# in-place operators too): ``buf[1:]`` passed as out= exported as ``buf`` unchanged.
_SCRIPTED_VIEW = (
    "out= cannot be a view of another tensor where torch.jit.trace records the call (as "
    "torch.onnx.export(..., dynamo=False) does): TorchScript's ONNX exporter drops a write "
    "into a view made before it; pass a tensor of its own as out, or use the result the "
    "call returns, or export with dynamo=True"
)


def _in_onnx_export() -> bool:
    """Whether ``torch.onnx.export`` runs. Where ``torch.onnx`` is not imported, no export
    has begun, and looking it up would import it (some 0.1 s) at the first traced call;
    where it is half imported (in another thread), it has not begun either."""
    onnx = sys.modules.get("torch.onnx")
    in_export = getattr(onnx, "is_in_onnx_export", None)
    return in_export is not None and bool(in_export())


def _symbolic(
    torch: Any, operation: Operation, arrays: tuple[Tensor, ...], axis: Any, reduction: Any
) -> Tensor:
    """The standard node, as ``torch.onnx.export(..., dynamo=True)`` takes it."""
    node = NODES[operation.name]
    attributes = {} if node.setting is None else {node.setting: axis}
    if operation.reduces:
        attributes["reduction"] = reduction
    shapes = tuple(tuple(array.shape) for array in arrays)
    return torch.onnx.ops.symbolic(
        node.op_type,
        arrays,
        attributes,
        dtype=arrays[0].dtype,
        shape=result_shape(operation, shapes, axis),
        version=node.version,
    )


def check_opset(opset: int, operation: Operation, reduction: str = "none", batch: int = 0) -> None:
    """Raise ValueError naming the opset a node needs where the export asks for less
    (``batch``: a GatherND's ``batch_dims``, an attribute from opset 12)."""
    node = NODES[operation.name]
    needed = max(node.opsets[reduction], 12 if batch else 0)
    if opset < needed:
        what = node.op_type + (f"({reduction!r})" if operation.reduces else "")
        msg = (
            f"scatterx's {operation.name} exports as the ONNX node {what}, which needs opset "
            f"{needed} or later; this export asks for opset {opset}: pass "
            f"opset_version={max(needed, 18)}"
        )
        raise ValueError(msg)


def _register_script_symbolics() -> None:
    """Register the TorchScript exporter's translations of the functional operators, once."""
    global _registered
    if not _registered:
        with _registering:
            if not _registered:
                _register()
                _registered = True


def _register() -> None:
    import torch.onnx

    # Public, and kept out of torch.onnx.__all__ with the rest of the TorchScript exporter.
    register = torch.onnx.register_custom_op_symbolic  # type: ignore[attr-defined]
    parse_args = torch.onnx.symbolic_helper.parse_args
    for name, operation in OPERATIONS.items():
        # Opset 1: every opset reaches it, and an opset below what a node needs is told so.
        register(f"scatterx::{name}", _script_symbolic(operation, parse_args), 1)


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _script_symbolic(operation: Operation, parse_args: Callable[..., Decorator]) -> Any:
    """The TorchScript exporter's translation of the operation's functional operator: its
    constant arguments read by torch's ``parse_args`` (``v`` a value, ``i`` an int, ``s``
    a string). An attribute at its default is left out: older opsets lack it."""
    node = NODES[operation.name]
    spec = ("v",) * len(operation.roles) + ("i",) * (node.setting is not None)
    spec += ("s",) * operation.reduces

    def symbolic(g: Any, *arguments: Any) -> Any:
        count = len(operation.roles)
        values, settings = arguments[:count], arguments[count:-1]
        setting = settings[0] if node.setting is not None else 0
        reduction = settings[-1] if operation.reduces else "none"
        check_opset(g.opset, operation, reduction, setting if node.setting == "batch_dims" else 0)
        attributes: dict[str, Any] = {}
        if node.setting == "axis" or setting:
            attributes[f"{node.setting}_i"] = setting
        if reduction != "none":  # the attribute exists from opset 16 on
            attributes["reduction_s"] = reduction
        return g.op(node.op_type, *values, **attributes)

    # parse_args pairs its descriptors with the parameters that the signature names.
    names = ("g", *operation.roles, *(("setting",) * (node.setting is not None)))
    names += ("reduction",) * operation.reduces + ("backend",)
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    symbolic.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(name, kind) for name in names]
    )
    return parse_args(*spec, "v")(symbolic)
