"""float32 cases against ONNX's ReferenceEvaluator and onnxruntime's CPU kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scatterx.testing import Case, all_cases, expected_result, first_difference

onnx = pytest.importorskip("onnx")

CASES = [
    c
    for c in all_cases()
    if c.error is None
    and c.dtype_key == "float32"
    and c.data.dtype.isnative
    and c.family in ("spec", "onnx-node", "generated:float32", "special", "strategy")
]


def _model(case: Case) -> bytes:
    from onnx import TensorProto, helper

    node = helper.make_node(
        "ScatterElements",
        ["data", "indices", "updates"],
        ["out"],
        axis=int(case.axis),
        reduction=case.reduction,
    )
    inputs = [
        helper.make_tensor_value_info("data", TensorProto.FLOAT, list(case.data.shape)),
        helper.make_tensor_value_info("indices", TensorProto.INT64, list(case.indices.shape)),
        helper.make_tensor_value_info("updates", TensorProto.FLOAT, list(case.updates.shape)),
    ]
    output = helper.make_tensor_value_info("out", TensorProto.FLOAT, list(case.data.shape))
    graph = helper.make_graph([node], "scatter", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return bytes(model.SerializeToString())


def _feeds(case: Case) -> dict[str, Any]:
    return {
        "data": np.ascontiguousarray(case.data),
        "indices": np.ascontiguousarray(case.indices, dtype=np.int64),
        "updates": np.ascontiguousarray(case.updates),
    }


def _compare(case: Case, peer: np.ndarray[Any, Any]) -> None:
    expected = expected_result(case)
    if case.reduction in ("max", "min"):
        # The contract propagates NaN as np.maximum does and keeps the second of two equal
        # zeros; ONNX leaves both open, so NaN and signed-zero ties are excepted here.
        keep = ~(np.isnan(peer) | np.isnan(expected) | ((peer == 0) & (expected == 0)))
        peer, expected = peer[keep], expected[keep]
    problem = first_difference(peer, expected, any_nan=case.reduction in ("add", "mul"))
    assert problem is None, problem


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnx_reference_evaluator_agrees(case: Case) -> None:
    from onnx.reference import ReferenceEvaluator

    (out,) = ReferenceEvaluator(onnx.load_from_string(_model(case))).run(None, _feeds(case))
    _compare(case, np.asarray(out))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnxruntime_cpu_agrees(case: Case) -> None:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(_model(case), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, _feeds(case))
    _compare(case, np.asarray(out))
