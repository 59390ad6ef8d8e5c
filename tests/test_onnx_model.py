"""A real model: message passing with scatter_reduce (sum and amax), exported by torch's
exporter at opset 18, run by onnxruntime, by the plain ReferenceEvaluator and by the
ReferenceEvaluator with scatterx's operators."""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np
import pytest

from scatterx.testing import assert_bitwise_equal, first_difference, reference_scatter_elements

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import scatterx.onnx  # noqa: E402

Array = np.ndarray[Any, Any]
NODES, FEATURES, EDGES = 6, 4, 15


def _graph_inputs(integers: bool) -> tuple[Array, Array, Array]:
    rng = np.random.default_rng(3)
    x = rng.integers(-8, 8, (NODES, FEATURES)) if integers else rng.standard_normal((6, 4))
    return (
        np.asarray(x, dtype=np.float32),
        rng.integers(0, NODES, EDGES),
        rng.integers(0, NODES, EDGES),
    )


def _loop_oracle(x: Array, src: Array, dst: Array) -> Array:
    """The model's answer by the contract's loop: sum and max of the messages at each node."""
    messages = x[src] * np.float32(2)
    targets = np.repeat(dst[:, None], FEATURES, axis=1)
    summed = reference_scatter_elements(np.zeros_like(x), targets, messages, reduction="add")
    largest = reference_scatter_elements(x, targets, messages, reduction="max")
    out: Array = summed + largest
    return out


def _torch_model() -> bytes:
    torch = pytest.importorskip("torch")

    class MessagePassing(torch.nn.Module):  # type: ignore[misc]
        def forward(self, x: Any, src: Any, dst: Any) -> Any:
            messages = x[src] * 2.0
            targets = dst.unsqueeze(1).expand(-1, x.shape[1])
            summed = torch.zeros_like(x).scatter_reduce(0, targets, messages, reduce="sum")
            largest = x.scatter_reduce(0, targets, messages, reduce="amax")
            return summed + largest

    buffer = io.BytesIO()
    arguments = tuple(torch.from_numpy(a) for a in _graph_inputs(True))
    with warnings.catch_warnings():
        # The dynamo exporter needs onnxscript; the TorchScript one is deprecated, and works.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            MessagePassing(),
            arguments,
            buffer,
            dynamo=False,
            opset_version=18,
            input_names=["x", "src", "dst"],
            output_names=["y"],
        )
    return buffer.getvalue()


def _helper_model() -> bytes:
    """The same graph built with onnx.helper: for where torch is not installed."""
    nodes = [
        helper.make_node("Gather", ["x", "src"], ["picked"], axis=0),
        helper.make_node("Constant", [], ["two"], value_float=2.0),
        helper.make_node("Mul", ["picked", "two"], ["messages"]),
        helper.make_node("Unsqueeze", ["dst", "one"], ["column"]),
        helper.make_node("Shape", ["messages"], ["shape"]),
        helper.make_node("Expand", ["column", "shape"], ["targets"]),
        helper.make_node("Sub", ["x", "x"], ["zeros"]),
        helper.make_node(
            "ScatterElements", ["zeros", "targets", "messages"], ["summed"], reduction="add"
        ),
        helper.make_node(
            "ScatterElements", ["x", "targets", "messages"], ["largest"], reduction="max"
        ),
        helper.make_node("Add", ["summed", "largest"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "message-passing",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, FEATURES]),
            helper.make_tensor_value_info("src", TensorProto.INT64, [None]),
            helper.make_tensor_value_info("dst", TensorProto.INT64, [None]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, FEATURES])],
        initializer=[helper.make_tensor("one", TensorProto.INT64, [1], [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


MODELS = {"torch-export": _torch_model, "onnx-helper": _helper_model}


@pytest.fixture(scope="module", params=list(MODELS))
def model(request: pytest.FixtureRequest) -> bytes:
    made: bytes = MODELS[request.param]()
    return made


def _runs(model: bytes, x: Array, src: Array, dst: Array) -> dict[str, Array]:
    feeds = {"x": x, "src": src, "dst": dst}
    results = {
        "reference": ReferenceEvaluator(model).run(None, feeds)[0],
        "scatterx": ReferenceEvaluator(model, new_ops=list(scatterx.onnx.ops)).run(None, feeds)[0],
    }
    try:
        import onnxruntime
    except ImportError:
        return results
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    results["onnxruntime"] = session.run(None, feeds)[0]
    return results


def test_the_model_scatters_with_sum_and_max_at_opset_18(model: bytes) -> None:
    proto = onnx.load_from_string(model)
    assert [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")] == [18]
    reductions = sorted(
        helper.get_attribute_value(a).decode()
        for n in proto.graph.node
        if n.op_type == "ScatterElements"
        for a in n.attribute
        if a.name == "reduction"
    )
    assert reductions == ["add", "max"]


def test_every_runtime_agrees_on_integer_valued_messages(model: bytes) -> None:
    inputs = _graph_inputs(integers=True)
    expected = _loop_oracle(*inputs)
    results = _runs(model, *inputs)
    for name, result in results.items():  # sums of small integers are exact in any order
        assert first_difference(result, expected) is None, name


def test_scatterx_is_the_loop_oracle_on_any_messages(model: bytes) -> None:
    inputs = _graph_inputs(integers=False)
    results = _runs(model, *inputs)
    assert_bitwise_equal(results["scatterx"], _loop_oracle(*inputs))
    for result in results.values():  # the others, up to their order of summation
        np.testing.assert_allclose(result, results["scatterx"], rtol=1e-5)
