"""scatter_nd and gather_nd against onnxruntime's ScatterND and GatherND; on torch CPU
tensors, JAX arrays and array-api-strict arrays: the library's own array type back, the
oracle's values; traced and recorded calls refused with a TypeError (torch.compile,
autograd, jax.jit)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx.testing import assert_bitwise_equal, reference_gather_nd, reference_scatter_nd

Array = np.ndarray[Any, Any]

RNG = np.random.default_rng(2026)
DATA = RNG.standard_normal((4, 3, 2)).astype(np.float32)
ROWS = np.array([[[1, -1], [0, 2]], [[1, 2], [-3, 0]], [[1, -1], [3, 1]]])  # (1, 2) twice
UPDATES = RNG.standard_normal((3, 2, 2)).astype(np.float32)
BATCH_ROWS = np.array([[[2], [-1]], [[0], [0]], [[1], [2]], [[-3], [1]]])  # data's (4, ...)


#: Data shapes of ranks 1 to 4 (each with every depth k).
SHAPES: list[tuple[int, ...]] = [(7,), (5, 4), (4, 3, 5), (3, 2, 3, 4)]


def _values(key: str, rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    if key == "int64":
        return rng.integers(-50, 50, shape)
    values = rng.standard_normal(shape).astype(key)
    values.reshape(-1)[::5] = -0.0
    return values


def _rows(
    rng: np.random.Generator, sizes: tuple[int, ...], lead: tuple[int, ...], repeat: bool = True
) -> Array:
    """Rows of ``len(sizes)`` indices of both signs, shaped ``lead + (k,)``: distinct
    unless ``repeat``."""
    n = math.prod(lead)
    every = np.stack(np.unravel_index(np.arange(math.prod(sizes)), sizes), -1)
    every -= rng.integers(0, 2, every.shape) * np.array(sizes)  # negative half the time
    chosen = rng.integers(0, len(every), n) if repeat else rng.permutation(len(every))[:n]
    return every[chosen].reshape(*lead, len(sizes)).astype(np.int64)


# onnxruntime: one-node models, duplicate-free rows (ONNX leaves repeated rows undefined).


def _run_onnx(op: str, inputs: dict[str, Array], out: Array, **attributes: Any) -> Array:
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import helper

    def info(name: str, array: Array) -> Any:
        kind = helper.np_dtype_to_tensor_dtype(array.dtype)
        return helper.make_tensor_value_info(name, kind, array.shape)

    node = helper.make_node(op, list(inputs), ["out"], **attributes)
    graph = helper.make_graph(
        [node], op, [info(n, a) for n, a in inputs.items()], [info("out", out)]
    )
    opset = 18 if op == "ScatterND" else 13
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 9)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (result,) = session.run(None, inputs)
    return np.asarray(result)


@pytest.mark.parametrize("key", ["float32", "int64"])
@pytest.mark.parametrize("reduction", scatterx.REDUCTIONS)
def test_scatter_nd_equals_onnxruntime(key: str, reduction: str) -> None:
    rng = np.random.default_rng(len(reduction))
    for shape in SHAPES:
        for depth in range(1, len(shape) + 1):
            data = _values(key, rng, shape)
            rows = _rows(rng, shape[:depth], (min(3, math.prod(shape[:depth])),), repeat=False)
            updates = _values(key, rng, rows.shape[:-1] + shape[depth:])
            got = scatterx.scatter_nd(data, rows, updates, reduction=reduction)
            inputs = {"data": data, "indices": rows, "updates": updates}
            want = _run_onnx("ScatterND", inputs, data, reduction=reduction)
            assert_bitwise_equal(got, want)
            assert_bitwise_equal(got, reference_scatter_nd(data, rows, updates, reduction))


@pytest.mark.parametrize("key", ["float32", "int64"])
@pytest.mark.parametrize("batch_dims", [0, 1, 2])
def test_gather_nd_equals_onnxruntime(key: str, batch_dims: int) -> None:
    rng = np.random.default_rng(batch_dims)
    for shape in SHAPES[batch_dims:]:
        data = _values(key, rng, shape)
        for depth in range(1, len(shape) - batch_dims + 1):
            sizes = shape[batch_dims : batch_dims + depth]
            rows = _rows(rng, sizes, (*shape[:batch_dims], 3))
            got = scatterx.gather_nd(data, rows, batch_dims=batch_dims)
            want = _run_onnx(
                "GatherND", {"data": data, "indices": rows}, got, batch_dims=batch_dims
            )
            assert_bitwise_equal(got, want)
            assert_bitwise_equal(got, reference_gather_nd(data, rows, batch_dims))


# Other array libraries, through the DLPack route.


def _library(name: str) -> tuple[Callable[[Array], Any], Callable[[Any], Array], type]:
    """(to the library, back to NumPy, the library's array type), or a skip."""
    if name == "torch":
        torch = pytest.importorskip("torch")
        return torch.from_numpy, lambda t: t.numpy(), torch.Tensor
    if name == "jax":
        pytest.importorskip("jax")
        import jax
        import jax.numpy as jnp

        return jnp.asarray, np.asarray, jax.Array
    xp = pytest.importorskip("array_api_strict")
    array_type = type(xp.asarray([0]))
    return xp.asarray, lambda a: np.asarray(a._array), array_type


LIBRARIES = ["torch", "jax", "array_api_strict"]


@pytest.mark.parametrize("reduction", scatterx.REDUCTIONS)
@pytest.mark.parametrize("name", LIBRARIES)
def test_scatter_nd_on_a_library(name: str, reduction: str) -> None:
    to, back, array_type = _library(name)
    got = scatterx.scatter_nd(to(DATA), to(ROWS), to(UPDATES), reduction=reduction)
    assert isinstance(got, array_type)
    assert_bitwise_equal(back(got), reference_scatter_nd(DATA, ROWS, UPDATES, reduction))


@pytest.mark.parametrize("name", LIBRARIES)
def test_gather_nd_on_a_library(name: str) -> None:
    to, back, array_type = _library(name)
    got = scatterx.gather_nd(to(DATA), to(ROWS))
    assert isinstance(got, array_type)
    assert_bitwise_equal(back(got), reference_gather_nd(DATA, ROWS))
    got = scatterx.gather_nd(to(DATA), to(BATCH_ROWS.astype(np.int32)), batch_dims=1)
    assert isinstance(got, array_type)
    assert_bitwise_equal(back(got), reference_gather_nd(DATA, BATCH_ROWS, 1))


@pytest.mark.parametrize("name", LIBRARIES)
def test_out_of_range_on_a_library(name: str) -> None:
    to, _, _ = _library(name)
    rows = ROWS.copy()
    rows[2, 1, 1] = 7
    with pytest.raises(IndexError, match=r"index 7 at position \(2, 1, 1\) of indices"):
        scatterx.scatter_nd(to(DATA), to(rows), to(UPDATES))
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 3"):
        scatterx.gather_nd(to(DATA), to(rows))


def test_torch_out_and_in_place() -> None:
    torch = pytest.importorskip("torch")
    want = reference_scatter_nd(DATA, ROWS, UPDATES, "add")
    data, rows, updates = map(torch.from_numpy, (DATA.copy(), ROWS, UPDATES))
    out = torch.empty_like(data)
    assert scatterx.scatter_nd(data, rows, updates, reduction="add", out=out) is out
    assert_bitwise_equal(out.numpy(), want)
    assert scatterx.scatter_nd(data, rows, updates, reduction="add", out=data) is data
    assert_bitwise_equal(data.numpy(), want)
    gathered = torch.empty((3, 2, 2), dtype=torch.float32)
    assert scatterx.gather_nd(data, rows, out=gathered) is gathered
    assert_bitwise_equal(gathered.numpy(), reference_gather_nd(want, ROWS))


def test_torch_compile_runs() -> None:
    """Served as torch operators (tests/test_torch_nd.py has the rest)."""
    torch = pytest.importorskip("torch")
    data, rows, updates = map(torch.from_numpy, (DATA, ROWS, UPDATES))

    def scatter(d: Any) -> Any:
        return scatterx.scatter_nd(d, rows, updates) * 2

    compiled = torch.compile(scatter, backend="aot_eager", fullgraph=True)
    got = compiled(data)
    assert_bitwise_equal(got.numpy(), reference_scatter_nd(DATA, ROWS, UPDATES) * 2)


def test_torch_autograd_records_and_no_grad_runs() -> None:
    torch = pytest.importorskip("torch")
    data = torch.from_numpy(DATA.copy()).requires_grad_()
    rows, updates = torch.from_numpy(ROWS), torch.from_numpy(UPDATES)
    assert scatterx.scatter_nd(data, rows, updates).grad_fn is not None
    assert scatterx.gather_nd(data, rows).grad_fn is not None
    with torch.no_grad():
        got = scatterx.scatter_nd(data, rows, updates, reduction="max")
        gathered = scatterx.gather_nd(data, rows)
    assert isinstance(got, torch.Tensor)
    assert got.grad_fn is None
    assert_bitwise_equal(got.numpy(), reference_scatter_nd(DATA, ROWS, UPDATES, "max"))
    assert_bitwise_equal(gathered.numpy(), reference_gather_nd(DATA, ROWS))


def test_jax_jit_runs() -> None:
    """Served under JAX's transforms (tests/test_jax_nd.py has the rest)."""
    pytest.importorskip("jax")
    import jax
    import jax.numpy as jnp

    rows, updates = jnp.asarray(ROWS), jnp.asarray(UPDATES)
    got = jax.jit(lambda d: scatterx.scatter_nd(d, rows, updates))(jnp.asarray(DATA))
    assert_bitwise_equal(np.asarray(got), reference_scatter_nd(DATA, ROWS, UPDATES))
    gathered = jax.jit(lambda d: scatterx.gather_nd(d, rows))(jnp.asarray(DATA))
    assert_bitwise_equal(np.asarray(gathered), reference_gather_nd(DATA, ROWS))
