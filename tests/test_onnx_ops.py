"""scatterx.onnx's operators: opsets, attributes, errors and every tensor type the
ReferenceEvaluator hands over (contract section 11)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import scatterx
from _subprocess import run_python
from scatterx._dtypes import DTYPE_REDUCTIONS
from scatterx.testing import (
    assert_bitwise_equal,
    reference_gather_elements,
    reference_scatter_elements,
)

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import scatterx.onnx  # noqa: E402

Array = np.ndarray[Any, Any]


def _model(op_type: str, element_type: int, opset: int, **attributes: Any) -> Any:
    roles = ["data", "indices"] if op_type == "GatherElements" else ["data", "indices", "updates"]
    node = helper.make_node(op_type, roles, ["output"], name="the-node", **attributes)
    types = {"data": element_type, "indices": TensorProto.INT64, "updates": element_type}
    graph = helper.make_graph(
        [node],
        "one-node",
        [helper.make_tensor_value_info(role, types[role], None) for role in roles],
        [helper.make_tensor_value_info("output", element_type, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run(model: Any, *arrays: Any) -> Array:
    session = ReferenceEvaluator(model, new_ops=list(scatterx.onnx.ops))
    roles = ("data", "indices", "updates")
    (result,) = session.run(None, dict(zip(roles, arrays, strict=False)))
    assert isinstance(result, np.ndarray)
    return result


def _scatter(dtype: Any, reduction: str, opset: int = 18) -> tuple[Array, Array]:
    """A 2-D scatter with duplicate targets, by the evaluator and by the oracle."""
    rng = np.random.default_rng(7)
    data = np.asarray(rng.integers(1, 4, (3, 4)), dtype=dtype)
    updates = np.asarray(rng.integers(1, 4, (4, 4)), dtype=dtype)
    indices = rng.integers(-3, 3, (4, 4))
    element_type = _element_type(data.dtype)
    attributes = {"reduction": reduction} if opset >= 16 else {}
    model = _model("ScatterElements", element_type, opset, axis=0, **attributes)
    expected = reference_scatter_elements(data, indices, updates, axis=0, reduction=reduction)
    return _run(model, data, indices, updates), expected


def _element_type(dtype: np.dtype[Any]) -> int:
    return int(TensorProto.STRING if dtype.kind == "O" else helper.np_dtype_to_tensor_dtype(dtype))


NUMBERS = [k for k in DTYPE_REDUCTIONS if k not in ("StringDType", "object", "str_", "bytes_")]


@pytest.mark.parametrize("key", NUMBERS)
def test_every_numeric_type_and_its_reductions_bit_for_bit(key: str) -> None:
    dtype = np.dtype(ml_dtypes.bfloat16) if key == "bfloat16" else np.dtype(key)
    for reduction in DTYPE_REDUCTIONS[key]:
        result, expected = _scatter(dtype, reduction)
        assert result.dtype == dtype
        assert_bitwise_equal(result, expected)


def test_bfloat16_computes_in_bfloat16() -> None:
    data = np.array([1.0, 256.0], dtype=ml_dtypes.bfloat16)
    updates = np.array([1.0, 1.0], dtype=ml_dtypes.bfloat16)  # 256 + 1 rounds back to 256
    model = _model("ScatterElements", TensorProto.BFLOAT16, 18, reduction="add")
    result = _run(model, data, np.array([1, 1]), updates)
    assert_bitwise_equal(result, np.array([1.0, 256.0], dtype=ml_dtypes.bfloat16))


def test_strings_as_object_arrays() -> None:
    data = np.array(["a", "b", "c"], dtype=object)
    updates = np.array(["x", "y"], dtype=object)
    indices = np.array([2, 2])
    for reduction, want in (("none", "y"), ("add", "cxy"), ("max", "y"), ("min", "c")):
        model = _model("ScatterElements", TensorProto.STRING, 18, reduction=reduction)
        result = _run(model, data, indices, updates)
        assert result.dtype == object
        assert result.tolist() == ["a", "b", want]
    gathered = _run(_model("GatherElements", TensorProto.STRING, 13), data, np.array([2, 0]))
    assert gathered.tolist() == ["c", "a"]


# The element types that scatterx has no arithmetic for: served by their bits where a
# call moves bits only (reduction none, Scatter, GatherElements), refused otherwise.
BITS_ONLY = {
    "float8_e4m3fn": TensorProto.FLOAT8E4M3FN,
    "float8_e4m3fnuz": TensorProto.FLOAT8E4M3FNUZ,
    "float8_e5m2": TensorProto.FLOAT8E5M2,
    "float8_e5m2fnuz": TensorProto.FLOAT8E5M2FNUZ,
    "int4": TensorProto.INT4,
    "uint4": TensorProto.UINT4,
    "float4_e2m1fn": TensorProto.FLOAT4E2M1,
    "float8_e8m0fnu": TensorProto.FLOAT8E8M0,
}


def _bits_only(name: str) -> tuple[Array, Array, Array]:
    dtype = np.dtype(getattr(ml_dtypes, name))
    data = np.arange(1, 7).reshape(2, 3).astype(np.uint8).view(dtype)
    updates = np.arange(9, 13).reshape(2, 2).astype(np.uint8).view(dtype)
    return data, np.array([[2, 2], [0, -1]]), updates


@pytest.mark.parametrize("name", BITS_ONLY)
def test_types_without_arithmetic_are_moved_by_their_bits(name: str) -> None:
    data, indices, updates = _bits_only(name)
    bits = (data.view(np.uint8), indices, updates.view(np.uint8))
    for model in (
        _model("ScatterElements", BITS_ONLY[name], 18, axis=1),
        _model("Scatter", BITS_ONLY[name], 10, axis=1),
    ):
        result = _run(model, data, indices, updates)
        assert result.dtype == data.dtype
        assert_bitwise_equal(result.view(np.uint8), reference_scatter_elements(*bits, axis=1))
    gathered = _run(_model("GatherElements", BITS_ONLY[name], 13, axis=1), data, indices)
    assert gathered.dtype == data.dtype
    want = reference_gather_elements(bits[0], indices, axis=1)
    assert_bitwise_equal(gathered.view(np.uint8), want)


@pytest.mark.parametrize("name", BITS_ONLY)
@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_types_without_arithmetic_refuse_a_reduction(name: str, reduction: str) -> None:
    model = _model("ScatterElements", BITS_ONLY[name], 18, reduction=reduction)
    with pytest.raises(TypeError, match=rf"^ScatterElements node 'the-node': {name} tensors"):
        _run(model, *_bits_only(name))


def test_the_custom_types_of_older_onnx_are_served() -> None:
    # onnx < 1.19 hands bfloat16 and float8 as one-field structured dtypes
    # (onnx.reference.custom_element_types); their bits are ml_dtypes'.
    old_bfloat16 = np.dtype((np.uint16, [("bfloat16", "<u2")]))
    data = np.array([1.0, 2.0], dtype=ml_dtypes.bfloat16)
    updates = np.array([0.5, 0.25], dtype=ml_dtypes.bfloat16)
    model = _model("ScatterElements", TensorProto.BFLOAT16, 18, reduction="add")
    result = _run(model, data.view(old_bfloat16), np.array([1, 1]), updates.view(old_bfloat16))
    want = reference_scatter_elements(data, np.array([1, 1]), updates, reduction="add")
    assert_bitwise_equal(result, want)
    old_float8 = np.dtype((np.uint8, [("e4m3fn", "u1")]))
    data8, indices, updates8 = _bits_only("float8_e4m3fn")
    data8, updates8 = data8.view(np.uint8), updates8.view(np.uint8)
    model = _model("ScatterElements", TensorProto.FLOAT8E4M3FN, 18, axis=1)
    result = _run(model, data8.view(old_float8), indices, updates8.view(old_float8))
    assert result.dtype == old_float8
    assert_bitwise_equal(
        result.view(np.uint8), reference_scatter_elements(data8, indices, updates8, axis=1)
    )
    model = _model("ScatterElements", TensorProto.FLOAT8E4M3FN, 18, reduction="max")
    with pytest.raises(TypeError, match="e4m3fn tensors are served by their bits"):
        _run(model, data8.view(old_float8), indices, updates8.view(old_float8))


def test_nan_propagates_as_np_maximum_not_as_python_max() -> None:
    # The reference's Python max drops a NaN update; the contract keeps it (section 3).
    data = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    updates = np.array([np.nan, 5.0], dtype=np.float32)
    model = _model("ScatterElements", TensorProto.FLOAT, 18, reduction="max")
    result = _run(model, data, np.array([0, 1]), updates)
    assert_bitwise_equal(result, np.maximum(data, np.array([np.nan, 5.0, 3.0], np.float32)))
    assert np.isnan(result[:2]).all()


@pytest.mark.parametrize(
    ("op_type", "opset", "attributes", "match"),
    [
        ("ScatterElements", 13, {"reduction": "add"}, "opset 13 has no attribute reduction"),
        ("ScatterElements", 11, {"reduction": "none"}, "opset 11 has no attribute reduction"),
        ("ScatterElements", 16, {"reduction": "max"}, "reduction 'max' needs opset 18"),
        ("ScatterElements", 17, {"reduction": "min"}, "opset 17 allows none, add, mul"),
        ("ScatterElements", 10, {}, "ScatterElements exists from opset 11; got 10"),
        (
            "GatherElements",
            13,
            {"reduction": "add"},
            "defines the attributes axis; got 'reduction'",
        ),
        ("Scatter", 10, {"reduction": "add"}, "defines the attributes axis; got 'reduction'"),
        ("ScatterElements", 18, {"reduction": "sum"}, "one of 'none'.*got 'sum'"),
        ("ScatterElements", 18, {"reduction": 3}, "one of 'none'.*got 3"),
        ("ScatterElements", 18, {"axis": 2}, r"axis.*\[-2, 1\]"),
    ],
)
def test_attributes_the_opset_does_not_allow_are_value_errors(
    op_type: str, opset: int, attributes: dict[str, Any], match: str
) -> None:
    model = _model(op_type, TensorProto.FLOAT, opset, **attributes)
    data = np.zeros((2, 2), np.float32)
    with pytest.raises(ValueError, match=rf"^{op_type} node 'the-node': .*{match}"):
        _run(model, data, np.zeros((2, 2), np.int64), data)


@pytest.mark.parametrize("opset", [9, 10])
def test_scatter_runs_at_the_opsets_that_define_it(opset: int) -> None:
    data, indices = np.zeros((2, 3), np.float32), np.array([[1, 0, 1]])
    updates = np.array([[1.0, 2.0, 3.0]], np.float32)
    result = _run(_model("Scatter", TensorProto.FLOAT, opset, axis=0), data, indices, updates)
    assert_bitwise_equal(result, reference_scatter_elements(data, indices, updates, 0))


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_scatter_after_opset_10_gets_the_evaluators_own_error(opset: int) -> None:
    model = _model("Scatter", TensorProto.FLOAT, opset, axis=0)
    with pytest.raises(Exception) as without:  # noqa: PT011  (whatever the evaluator raises)
        ReferenceEvaluator(model)
    with pytest.raises(type(without.value)) as served:
        ReferenceEvaluator(model, new_ops=list(scatterx.onnx.ops))
    assert str(served.value) == str(without.value)
    assert any("ScatterElements" in note for note in served.value.__notes__)


@pytest.mark.parametrize(("opset", "reduction"), [(16, "add"), (16, "mul"), (18, "max")])
def test_reductions_of_their_opsets_run(opset: int, reduction: str) -> None:
    result, expected = _scatter(np.float32, reduction, opset)
    assert_bitwise_equal(result, expected)
    result, expected = _scatter(np.float32, "none", 11)  # opset 11's default
    assert_bitwise_equal(result, expected)


@pytest.mark.parametrize(("axis", "named"), [(1.5, "float32"), ("1", "str"), ([1], "list")])
def test_an_axis_of_the_wrong_type_is_the_contracts_type_error(axis: Any, named: str) -> None:
    data = np.zeros((2, 2), np.float32)
    for op_type, opset in (("ScatterElements", 18), ("GatherElements", 13), ("Scatter", 10)):
        model = _model(op_type, TensorProto.FLOAT, opset, axis=axis)
        # OpRun.run rewraps a TypeError into one without the message: the contract's stays.
        with pytest.raises(TypeError, match=rf"^{op_type} node 'the-node': axis .*{named}"):
            _run(model, data, np.zeros((2, 2), np.int64), data)


def test_type_errors_of_the_contract_keep_their_message() -> None:
    data = np.zeros((2, 2), np.float32)
    model = _model("ScatterElements", TensorProto.FLOAT, 18)
    with pytest.raises(TypeError, match="indices must be int32 or int64; got float64"):
        _run(model, data, np.zeros((2, 2)), data)
    with pytest.raises(TypeError, match=r"float32.*float64|float64.*float32"):
        _run(model, data, np.zeros((2, 2), np.int64), data.astype(np.float64))


@pytest.mark.parametrize("op_type", ["ScatterElements", "GatherElements", "Scatter"])
def test_out_of_range_indices_are_the_contracts_index_error(op_type: str) -> None:
    data = np.zeros((2, 3), np.float32)
    indices = np.array([[0, 1, 0], [2, 3, 0]])
    model = _model(op_type, TensorProto.FLOAT, 10 if op_type == "Scatter" else 13, axis=1)
    expected = (
        rf"^{op_type} node 'the-node': index 3 at position \(1, 1\) of indices is out of "
        r"bounds for axis 1 with size 3: valid indices are in \[-3, 2\]$"
    )
    with pytest.raises(IndexError, match=expected):
        _run(model, data, indices, np.ones((2, 3), np.float32))


def test_an_unnamed_node_is_named_by_its_type() -> None:
    model = _model("GatherElements", TensorProto.FLOAT, 13)
    model.graph.node[0].name = ""
    with pytest.raises(IndexError, match=r"^GatherElements: index 5"):
        _run(model, np.zeros(3, np.float32), np.array([5]))


def test_use_backend_around_run_chooses_the_backend() -> None:
    model = _model("ScatterElements", TensorProto.FLOAT, 18)
    data = np.zeros(3, np.float32)
    with scatterx.use_backend("numpy"):
        result = _run(model, data, np.array([1]), np.ones(1, np.float32))
        assert_bitwise_equal(result, np.array([0, 1, 0], np.float32))
    with scatterx.use_backend("dask"), pytest.raises(scatterx.BackendError, match="the-node"):
        _run(model, data, np.array([1]), np.ones(1, np.float32))


def test_inputs_are_left_unchanged() -> None:
    data = np.zeros((2, 3), np.float32)
    before = data.copy()
    model = _model("ScatterElements", TensorProto.FLOAT, 18, axis=1)
    result = _run(model, data, np.array([[1], [2]]), np.ones((2, 1), np.float32))
    assert_bitwise_equal(data, before)
    assert not np.shares_memory(result, data)


def test_ops_is_the_tuple_of_the_five_classes() -> None:
    from onnx.reference.op_run import OpRun

    ops = scatterx.onnx.ops
    assert isinstance(ops, tuple)
    assert [c.__name__ for c in ops] == [
        "ScatterElements",
        "GatherElements",
        "Scatter",
        "ScatterND",
        "GatherND",
    ]
    assert all(issubclass(c, OpRun) and c.op_domain == "" for c in ops)
    assert scatterx.onnx.ScatterElements is ops[0]
    with pytest.raises(AttributeError, match="no attribute 'Gather'"):
        scatterx.onnx.Gather  # noqa: B018


def test_importing_scatterx_onnx_leaves_onnx_unimported() -> None:
    code = (
        "import sys, scatterx, scatterx.onnx; print('onnx' in sys.modules); "
        "scatterx.onnx.ops; print('onnx' in sys.modules)"
    )
    assert run_python(code).split() == ["False", "True"]
