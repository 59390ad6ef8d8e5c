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

import sys
import threading
from collections.abc import Callable
from typing import Any

from .._check import GATHER, SCATTER, Operation
from .checks import check_exported

Tensor = Any

# The ONNX opset from which ScatterElements has each reduction; GatherElements: 11.
MIN_OPSET = {"none": 11, "add": 16, "mul": 16, "max": 18, "min": 18}
GATHER_OPSET = 11

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
    data, indices = arrays[0], arrays[1]
    if operation is GATHER:
        return torch.onnx.ops.symbolic(
            "GatherElements",
            arrays,
            {"axis": axis},
            dtype=data.dtype,
            shape=indices.shape,
            version=13,
        )
    return torch.onnx.ops.symbolic(
        "ScatterElements",
        arrays,
        {"axis": axis, "reduction": reduction},
        dtype=data.dtype,
        shape=data.shape,
        version=18,
    )


def check_opset(opset: int, operation: Operation, reduction: str = "none") -> None:
    """Raise ValueError naming the opset a node needs where the export asks for less."""
    needed = GATHER_OPSET if operation is GATHER else MIN_OPSET[reduction]
    if opset < needed:
        what = "GatherElements" if operation is GATHER else f"ScatterElements({reduction!r})"
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

    # Opset 1: every opset reaches them, and an opset below what a node needs is told so.
    scatter, gather = _script_symbolics(torch.onnx.symbolic_helper.parse_args)
    # Public, and kept out of torch.onnx.__all__ with the rest of the TorchScript exporter.
    register = torch.onnx.register_custom_op_symbolic  # type: ignore[attr-defined]
    register("scatterx::scatter_elements", scatter, 1)
    register("scatterx::gather_elements", gather, 1)


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _script_symbolics(parse_args: Callable[..., Decorator]) -> tuple[Any, Any]:
    """The TorchScript exporter's translations: the operators' constant arguments read by
    torch's ``parse_args`` (``v`` a value, ``i`` an int, ``s`` a string)."""

    @parse_args("v", "v", "v", "i", "s", "v")
    def scatter(
        g: Any, data: Any, indices: Any, updates: Any, axis: int, reduction: str, backend: Any
    ) -> Any:
        check_opset(g.opset, SCATTER, reduction)
        if reduction == "none":  # the attribute exists from opset 16 on
            return g.op("ScatterElements", data, indices, updates, axis_i=axis)
        return g.op("ScatterElements", data, indices, updates, axis_i=axis, reduction_s=reduction)

    @parse_args("v", "v", "i", "v")
    def gather(g: Any, data: Any, indices: Any, axis: int, backend: Any) -> Any:
        check_opset(g.opset, GATHER)
        return g.op("GatherElements", data, indices, axis_i=axis)

    return scatter, gather
