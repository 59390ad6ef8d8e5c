"""ONNX models on scatterx's kernels: operators for onnx's ReferenceEvaluator (contract 11).

``ReferenceEvaluator(model, new_ops=scatterx.onnx.ops)`` runs every ScatterElements
(opsets 11, 13, 16, 18), GatherElements (11, 13), deprecated Scatter (9, 10), ScatterND
(11, 13, 16, 18) and GatherND (11, 12, 13) node of a model through
:func:`scatterx.scatter_elements`, :func:`scatterx.gather_elements`,
:func:`scatterx.scatter_nd` and :func:`scatterx.gather_nd`: the automatic choice of
backend, or the one of an enclosing :func:`scatterx.use_backend`.

A torch model that calls scatterx exports to ONNX as these standard nodes:
``torch.onnx.export(model, args, dynamo=True)`` as it is, a program of
``torch.export.export`` with ``custom_translation_table=torch_translations()``, and the
TorchScript exporter (``dynamo=False``) as it is (docs/onnx.md).

Importing this module imports nothing of onnx; its names do, on first use.

Examples
--------
>>> import numpy as np
>>> from onnx import TensorProto, helper
>>> from onnx.reference import ReferenceEvaluator
>>> import scatterx.onnx
>>> node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction="add")
>>> x, i, u = ("x", TensorProto.FLOAT), ("i", TensorProto.INT64), ("u", TensorProto.FLOAT)
>>> graph = helper.make_graph(
...     [node],
...     "g",
...     [helper.make_tensor_value_info(n, t, None) for n, t in (x, i, u)],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
... )
>>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
>>> session = ReferenceEvaluator(model, new_ops=scatterx.onnx.ops)
>>> data = np.zeros((1, 3), np.float32)
>>> session.run(None, {"x": data, "i": np.array([[0, 2, 0]]), "u": np.ones((1, 3), np.float32)})
[array([[2., 0., 1.]], dtype=float32)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .evaluator import GatherElements, GatherND, Scatter, ScatterElements, ScatterND, ops
    from .translations import torch_translations

__all__ = [
    "GatherElements",
    "GatherND",
    "Scatter",
    "ScatterElements",
    "ScatterND",
    "ops",
    "torch_translations",
]


def __getattr__(name: str) -> Any:
    """The operator classes, made (and onnx imported) on first use."""
    if name == "torch_translations":
        from .translations import torch_translations

        return torch_translations
    if name in __all__:
        from . import evaluator

        return getattr(evaluator, name)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return sorted(__all__)
