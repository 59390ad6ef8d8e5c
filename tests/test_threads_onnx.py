"""The ONNX evaluator ops on first use from 8 threads at once (contract sections 11, 13)."""

from __future__ import annotations

import pytest

from _threads import first_use_in_threads

pytest.importorskip("onnx")

# Each thread makes its own one-node models from its cases, with onnx's helpers, and runs
# them in its own ReferenceEvaluator: the first one in the process imports scatterx.onnx's
# classes (and onnx's evaluator) while the others ask for them.
PREPARE = """
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator
import scatterx.onnx


def model(op_type, case, **attributes):
    roles = ["data", "indices"] if op_type == "GatherElements" else ["data", "indices", "updates"]
    node = helper.make_node(op_type, roles, ["output"], axis=case.axis, **attributes)
    element = helper.np_dtype_to_tensor_dtype(case.data.dtype)
    index = helper.np_dtype_to_tensor_dtype(case.indices.dtype)
    types = {"data": element, "indices": index, "updates": element}
    graph = helper.make_graph(
        [node],
        op_type,
        [helper.make_tensor_value_info(role, types[role], None) for role in roles],
        [helper.make_tensor_value_info("output", element, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def first_use(thread, case):
    scatter = model("ScatterElements", case, reduction=case.reduction)
    session = ReferenceEvaluator(scatter, new_ops=scatterx.onnx.ops)
    feeds = {"data": case.data, "indices": case.indices, "updates": case.updates}
    check(session.run(None, feeds)[0], case.scattered)
    session = ReferenceEvaluator(model("GatherElements", case), new_ops=scatterx.onnx.ops)
    check(session.run(None, {"data": case.data, "indices": case.indices})[0], case.gathered)
"""


@pytest.mark.parametrize("compile_mode", ["background", "wait"])
def test_evaluator_ops_first_used_from_threads_at_once(compile_mode: str) -> None:
    # background: numba's default, a user's first calls run on numpy while numba compiles
    first_use_in_threads(PREPARE, env={"SCATTERX_NUMBA_COMPILE": compile_mode})
