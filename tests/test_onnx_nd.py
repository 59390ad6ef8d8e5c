"""ScatterND and GatherND in onnx's ReferenceEvaluator with scatterx's operators: ONNX's
own node tests, one-node models against onnxruntime, and the opset and index errors."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from scatterx import backends
from scatterx.testing import assert_bitwise_equal
from scatterx.testing._onnx_cases import onnx_node_tests

pytest.importorskip("onnx")

from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import scatterx
import scatterx.onnx
from scatterx.onnx.evaluator import GatherND, ScatterND

OPERATORS = ("ScatterND", "GatherND")
REDUCTIONS = ("none", "add", "mul", "max", "min")
DTYPES = {
    "float32": (np.float32, TensorProto.FLOAT),
    "int64": (np.int64, TensorProto.INT64),
    "bool": (np.bool_, TensorProto.BOOL),
}
CPU_BACKENDS = [r.name for r in backends() if r.available and r.array_types == ("numpy:ndarray",)]


def _node_tests() -> tuple[Any, ...]:
    """ONNX's node tests of ScatterND and GatherND, from scatterx.testing's one collector
    (``tests/test_onnx_conformance.py`` runs them through the evaluator on each backend)."""
    return tuple(t for t in onnx_node_tests() if t.model.graph.node[0].op_type in OPERATORS)


NODE_TESTS = _node_tests()


def _feeds(model: Any, inputs: list[Any]) -> dict[str, Any]:
    names = [i.name for i in model.graph.input]
    return dict(zip(names, inputs, strict=True))


def test_both_operators_have_node_tests() -> None:
    ops = [t.model.graph.node[0].op_type for t in NODE_TESTS]
    assert (ops.count("ScatterND"), ops.count("GatherND")) == (7, 3)


def test_the_operators_are_served() -> None:
    assert ScatterND in scatterx.onnx.ops
    assert GatherND in scatterx.onnx.ops
    assert scatterx.onnx.ScatterND is ScatterND
    assert scatterx.onnx.GatherND is GatherND
    assert {"ScatterND", "GatherND"} <= set(scatterx.onnx.__all__) <= set(dir(scatterx.onnx))


# One-node models -------------------------------------------------------------------------


def _model(op_type: str, inputs: list[tuple[str, int]], opset: int, **attributes: Any) -> Any:
    node = helper.make_node(op_type, [n for n, _ in inputs], ["y"], name="nd", **attributes)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, t, None) for n, t in inputs],
        [helper.make_tensor_value_info("y", inputs[0][1], None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _scatter_model(element_type: int, opset: int = 18, **attributes: Any) -> Any:
    inputs = [("data", element_type), ("indices", TensorProto.INT64), ("updates", element_type)]
    return _model("ScatterND", inputs, opset, **attributes)


def _gather_model(element_type: int, opset: int = 13, **attributes: Any) -> Any:
    inputs = [("data", element_type), ("indices", TensorProto.INT64)]
    return _model("GatherND", inputs, opset, **attributes)


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> Any:
    """Integer values (as floats for float32) small enough that no product overflows."""
    if dtype is np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    return rng.integers(-3, 4, shape).astype(dtype)


def _rows(
    rng: np.random.Generator, sizes: tuple[int, ...], batch: tuple[int, ...], count: int
) -> Any:
    """``batch + (count, len(sizes))`` index rows, distinct within each batch, a random half
    of the indices negative (counting from the end)."""
    blocks = []
    for _ in range(math.prod(batch)):
        flat = rng.choice(math.prod(sizes), size=count, replace=False)
        rows = np.stack(np.unravel_index(flat, sizes), axis=-1).astype(np.int64)
        rows -= np.where(rng.random(rows.shape) < 0.5, np.array(sizes), 0)
        blocks.append(rows)
    return np.stack(blocks).reshape(*batch, count, len(sizes))


def _onnxruntime(model: Any, feeds: dict[str, Any]) -> Any:
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)[0]


SCATTER_SHAPES = [((5, 3, 2), 1), ((5, 3, 2), 2), ((5, 3, 2), 3), ((7,), 1)]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(("shape", "depth"), SCATTER_SHAPES, ids=lambda v: str(v))
def test_scatter_nd_model_matches_onnxruntime(
    reduction: str, dtype: str, shape: tuple[int, ...], depth: int
) -> None:
    np_dtype, element_type = DTYPES[dtype]
    rng = np.random.default_rng([len(shape), depth, REDUCTIONS.index(reduction)])
    count = min(3, math.prod(shape[:depth]))
    indices = _rows(rng, shape[:depth], (), count)
    feeds = {
        "data": _values(rng, shape, np_dtype),
        "indices": indices,
        "updates": _values(rng, (count, *shape[depth:]), np_dtype),
    }
    model = _scatter_model(element_type, reduction=reduction)
    ours = ReferenceEvaluator(model, new_ops=list(scatterx.onnx.ops)).run(None, feeds)[0]
    if dtype == "bool" and reduction in ("max", "min"):
        # onnxruntime refuses bool under max and min; the reference computes them.
        expected = ReferenceEvaluator(model).run(None, feeds)[0]
    else:
        expected = _onnxruntime(model, feeds)
    assert_bitwise_equal(ours, expected)
    assert_bitwise_equal(ours, scatterx.scatter_nd(*feeds.values(), reduction=reduction))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("batch_dims", [0, 1, 2])
@pytest.mark.parametrize("depth", [1, 2])
def test_gather_nd_model_matches_onnxruntime(batch_dims: int, depth: int, dtype: str) -> None:
    np_dtype, element_type = DTYPES[dtype]
    shape = (2, 3, 4, 2)
    rng = np.random.default_rng([batch_dims, depth])
    sizes = shape[batch_dims : batch_dims + depth]
    indices = _rows(rng, sizes, shape[:batch_dims], 2)
    if batch_dims == 0:
        indices = indices.reshape(1, 2, depth)  # a leading dimension of the rows' own
    feeds = {"data": _values(rng, shape, np_dtype), "indices": indices}
    attributes = {"batch_dims": batch_dims} if batch_dims else {}
    model = _gather_model(element_type, **attributes)
    ours = ReferenceEvaluator(model, new_ops=list(scatterx.onnx.ops)).run(None, feeds)[0]
    assert_bitwise_equal(ours, _onnxruntime(model, feeds))
    assert_bitwise_equal(ours, scatterx.gather_nd(*feeds.values(), batch_dims=batch_dims))


@pytest.mark.parametrize("opset", [11, 13, 16, 18])
def test_scatter_nd_every_opset_without_reduction(opset: int) -> None:
    model = _scatter_model(TensorProto.FLOAT, opset)
    feeds = {
        "data": np.zeros((3, 2), np.float32),
        "indices": np.array([[2], [-3]]),
        "updates": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32),
    }
    result = ReferenceEvaluator(model, new_ops=list(scatterx.onnx.ops)).run(None, feeds)[0]
    assert_bitwise_equal(result, np.array([[3, 4], [0, 0], [1, 2]], np.float32))


@pytest.mark.parametrize("opset", [11, 12, 13])
def test_gather_nd_every_opset(opset: int) -> None:
    model = _gather_model(TensorProto.INT64, opset)
    feeds = {"data": np.arange(6).reshape(3, 2), "indices": np.array([[2], [-3]])}
    result = ReferenceEvaluator(model, new_ops=list(scatterx.onnx.ops)).run(None, feeds)[0]
    assert_bitwise_equal(result, np.array([[4, 5], [0, 1]]))


def test_duplicate_rows_apply_in_order() -> None:
    # Under none the last row wins (ONNX leaves it open); under add every row counts.
    feeds = {
        "data": np.zeros((2, 2), np.float32),
        "indices": np.array([[1], [0], [1]]),
        "updates": np.array([[1, 2], [3, 4], [5, 6]], np.float32),
    }
    for reduction, expected in (("none", [[3, 4], [5, 6]]), ("add", [[3, 4], [6, 8]])):
        model = _scatter_model(TensorProto.FLOAT, reduction=reduction)
        result = ReferenceEvaluator(model, new_ops=list(scatterx.onnx.ops)).run(None, feeds)[0]
        assert_bitwise_equal(result, np.array(expected, np.float32))


def test_float8_moves_by_its_bits() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    data = np.arange(6, dtype=np.float32).reshape(3, 2).astype(ml_dtypes.float8_e4m3fn)
    updates = np.array([[7.0, 8.0]], np.float32).astype(ml_dtypes.float8_e4m3fn)
    scatter = _scatter_model(TensorProto.FLOAT8E4M3FN)
    feeds = {"data": data, "indices": np.array([[1]]), "updates": updates}
    result = ReferenceEvaluator(scatter, new_ops=list(scatterx.onnx.ops)).run(None, feeds)[0]
    assert result.astype(np.float32).tolist() == [[0, 1], [7, 8], [4, 5]]
    gather = _gather_model(TensorProto.FLOAT8E4M3FN)
    feeds = {"data": data, "indices": np.array([[2, 1]])}
    result = ReferenceEvaluator(gather, new_ops=list(scatterx.onnx.ops)).run(None, feeds)[0]
    assert result.astype(np.float32).tolist() == [5]
    add = _scatter_model(TensorProto.FLOAT8E4M3FN, reduction="add")
    session = ReferenceEvaluator(add, new_ops=list(scatterx.onnx.ops))
    with pytest.raises(TypeError, match=r"ScatterND node 'nd'.*float8_e4m3fn"):
        session.run(None, {"data": data, "indices": np.array([[1]]), "updates": updates})


# Errors ----------------------------------------------------------------------------------


def _run(model: Any, feeds: dict[str, Any]) -> Any:
    return ReferenceEvaluator(model, new_ops=list(scatterx.onnx.ops)).run(None, feeds)


SCATTER_FEEDS = {
    "data": np.zeros((3, 2), np.float32),
    "indices": np.array([[0]]),
    "updates": np.ones((1, 2), np.float32),
}
GATHER_FEEDS = {"data": np.zeros((2, 3), np.float32), "indices": np.array([[0], [1]])}

OPSET_ERRORS = [
    ("ScatterND", 11, {"reduction": "add"}, "opset 11 has no attribute reduction"),
    ("ScatterND", 13, {"reduction": "none"}, "opset 13 has no attribute reduction"),
    ("ScatterND", 16, {"reduction": "max"}, "reduction 'max' needs opset 18"),
    ("ScatterND", 16, {"reduction": "min"}, "reduction 'min' needs opset 18"),
    ("ScatterND", 18, {"axis": 0}, "got 'axis'"),
    ("ScatterND", 10, {}, "ScatterND exists from opset 11; got 10"),
    ("GatherND", 11, {"batch_dims": 1}, "opset 11 has no attribute batch_dims"),
    ("GatherND", 11, {"batch_dims": 0}, "opset 11 has no attribute batch_dims"),
    ("GatherND", 13, {"axis": 0}, "got 'axis'"),
    ("GatherND", 10, {}, "GatherND exists from opset 11; got 10"),
]


@pytest.mark.parametrize(
    ("op_type", "opset", "attributes", "message"),
    OPSET_ERRORS,
    ids=[f"{op}-{opset}-{'-'.join(map(str, a.values()))}" for op, opset, a, _ in OPSET_ERRORS],
)
def test_opset_and_attribute_errors_name_the_node(
    op_type: str, opset: int, attributes: dict[str, Any], message: str
) -> None:
    if op_type == "ScatterND":
        model, feeds = _scatter_model(TensorProto.FLOAT, opset, **attributes), SCATTER_FEEDS
    else:
        model, feeds = _gather_model(TensorProto.FLOAT, opset, **attributes), GATHER_FEEDS
    with pytest.raises(ValueError, match=f"^{op_type} node 'nd': .*{message}"):
        _run(model, feeds)


@pytest.mark.parametrize(("opset", "reduction"), [(16, "add"), (16, "mul"), (18, "max")])
def test_reductions_their_opsets_allow(opset: int, reduction: str) -> None:
    result = _run(_scatter_model(TensorProto.FLOAT, opset, reduction=reduction), SCATTER_FEEDS)
    assert result[0].shape == (3, 2)


def test_a_reduction_no_opset_knows_is_the_contracts_error() -> None:
    model = _scatter_model(TensorProto.FLOAT, reduction="mean")
    with pytest.raises(ValueError, match=r"^ScatterND node 'nd': .*mean"):
        _run(model, SCATTER_FEEDS)


def test_batch_dims_out_of_range_is_the_contracts_error() -> None:
    with pytest.raises(ValueError, match=r"^GatherND node 'nd': batch_dims"):
        _run(_gather_model(TensorProto.FLOAT, batch_dims=2), GATHER_FEEDS)


def test_a_shape_mismatch_names_the_node() -> None:
    feeds = {**SCATTER_FEEDS, "updates": np.ones((1, 3), np.float32)}
    with pytest.raises(ValueError, match=r"^ScatterND node 'nd': updates must have the shape"):
        _run(_scatter_model(TensorProto.FLOAT), feeds)


@pytest.mark.parametrize(
    ("row", "bad"),
    [([[3]], 3), ([[-4]], -4), ([[0], [7]], 7)],
    ids=["past-the-end", "negative", "second-row"],
)
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_scatter_nd_index_out_of_range_names_the_node(row: Any, bad: int, backend: str) -> None:
    if backend not in CPU_BACKENDS:
        pytest.skip(f"{backend} is unavailable")
    indices = np.array(row)
    feeds = {**SCATTER_FEEDS, "indices": indices, "updates": np.ones((len(row), 2), np.float32)}
    with (
        scatterx.use_backend(backend),
        pytest.raises(IndexError, match=f"^ScatterND node 'nd': index {bad} "),
    ):
        _run(_scatter_model(TensorProto.FLOAT), feeds)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd_index_out_of_range_names_the_node(batch_dims: int, backend: str) -> None:
    if backend not in CPU_BACKENDS:
        pytest.skip(f"{backend} is unavailable")
    size = (2, 3)[batch_dims]
    feeds = {**GATHER_FEEDS, "indices": np.array([[0], [size]])}
    attributes = {"batch_dims": batch_dims} if batch_dims else {}
    with (
        scatterx.use_backend(backend),
        pytest.raises(IndexError, match=f"^GatherND node 'nd': index {size} "),
    ):
        _run(_gather_model(TensorProto.FLOAT, **attributes), feeds)


def test_a_node_without_a_name_is_named_by_its_type() -> None:
    model = _gather_model(TensorProto.FLOAT)
    model.graph.node[0].name = ""
    with pytest.raises(IndexError, match=r"^GatherND: index 5 "):
        _run(model, {**GATHER_FEEDS, "indices": np.array([[5]])})


def test_the_rows_of_every_combination_are_distinct() -> None:
    # The models above compare with onnxruntime only where no two rows pick one slice.
    rng = np.random.default_rng(0)
    for sizes, batch in itertools.product([(5,), (5, 3), (5, 3, 2)], [(), (2,), (2, 3)]):
        rows = _rows(rng, sizes, batch, 3)
        wrapped = np.where(rows < 0, rows + np.array(sizes), rows).reshape(-1, 3, len(sizes))
        assert all(len({tuple(r) for r in block}) == 3 for block in wrapped)


def test_a_batch_dims_not_an_integer_is_the_contracts_type_error() -> None:
    data = {**GATHER_FEEDS, "data": np.zeros((2, 3, 2), np.float32)}
    with pytest.raises(TypeError, match=r"^GatherND node 'nd': batch_dims must be an int"):
        _run(_gather_model(TensorProto.FLOAT, batch_dims=1.0), data)
