"""Translations of scatterx's torch operators for ``torch.onnx.export``'s table.

A program made with ``torch.export.export`` holds scatterx's functional operators (an
``out=`` call is one of them and a write into ``out``: :mod:`scatterx._torch.export`); the
dynamo exporter turns them into ONNX's standard nodes with
``custom_translation_table=scatterx.onnx.torch_translations()``. A model exported directly,
``torch.onnx.export(model, args, dynamo=True)``, needs no table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

INSTALL = (
    "translating scatterx's torch operators into ONNX needs onnxscript (the exporter of "
    "torch.onnx.export(..., dynamo=True) does too): pip install 'scatterx[onnx]'"
)


def torch_translations() -> dict[Any, Callable[..., Any]]:
    """The ``custom_translation_table`` of ``torch.onnx.export`` for scatterx's operators.

    Defines the torch operators first, where torch's import has not.

    Returns
    -------
    dict
        ``torch.ops.scatterx.scatter_elements.default`` to a function that makes
        ScatterElements (opset 18, with its reduction), ``gather_elements`` to
        GatherElements, ``scatter_nd`` to ScatterND (opset 18) and ``gather_nd`` to
        GatherND (with its ``batch_dims``).

    Raises
    ------
    ImportError
        Where onnxscript or torch is not installed, saying what to install.

    See Also
    --------
    scatterx.onnx.ops : The evaluator's operators, which run the file on scatterx.

    Notes
    -----
    ``torch.onnx.export(torch.export.export(model, args),
    custom_translation_table=scatterx.onnx.torch_translations())``; docs/onnx.md shows the
    round trip from a module to a file that onnxruntime runs.
    """
    try:
        from onnxscript import opset18 as op
    except ImportError as exc:
        raise ImportError(INSTALL) from exc
    from .._torch.ops import operators

    ops = operators()

    def scatter(
        data: Any, indices: Any, updates: Any, axis: int, reduction: str, backend: Any = None
    ) -> Any:
        return op.ScatterElements(data, indices, updates, axis=axis, reduction=reduction)

    def gather(data: Any, indices: Any, axis: int, backend: Any = None) -> Any:
        return op.GatherElements(data, indices, axis=axis)

    def scatter_nd(
        data: Any, indices: Any, updates: Any, reduction: str, backend: Any = None
    ) -> Any:
        return op.ScatterND(data, indices, updates, reduction=reduction)

    def gather_nd(data: Any, indices: Any, batch_dims: int, backend: Any = None) -> Any:
        return op.GatherND(data, indices, batch_dims=batch_dims)

    return {
        ops.scatter: scatter,
        ops.gather: gather,
        ops.scatter_nd: scatter_nd,
        ops.gather_nd: gather_nd,
    }
