"""JAX under ``jax.jit`` on the CPU: the XLA FFI target runs the call on XLA's buffers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import scatterx
from _backends import Recorder
from scatterx._jax import ffi as _jax_ffi
from scatterx.backend import DTYPE_REDUCTIONS
from scatterx.testing import (
    assert_bitwise_equal,
    reference_gather_elements,
    reference_scatter_elements,
    scoped_registry,
)

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("numba")

REDUCTIONS = ("none", "add", "mul", "max", "min")
DTYPES = ("float32", "float64", "int32", "int64", "uint8", "bool", "float16", "bfloat16")
DTYPES += ("complex64",)


@pytest.fixture(autouse=True)
def _x64() -> Iterator[None]:
    with jax.enable_x64(True):  # int64 indices and 64-bit data stay as they are
        yield


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in ("int32", "int64", "uint8"):
        return rng.integers(0, 5, shape).astype(dtype)
    values = rng.standard_normal(shape) + (
        1j * rng.standard_normal(shape) if "complex" in dtype else 0
    )
    return np.asarray(values, dtype=jnp.dtype(dtype))


def _case(
    dtype: str, shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int, seed: int = 0
) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(seed)
    data = _values(rng, shape, dtype)
    indices = rng.integers(-shape[axis], shape[axis], index_shape).astype(np.int64)
    return data, indices, _values(rng, index_shape, dtype)


def _jitted_scatter(axis: int, reduction: str, backend: str | None = None) -> Any:
    def scatter(d: Any, i: Any, u: Any) -> Any:
        return scatterx.scatter_elements(d, i, u, axis=axis, reduction=reduction, backend=backend)

    return jax.jit(scatter)


def _lowered_text(function: Any, *arrays: Any) -> str:
    return str(function.lower(*arrays).as_text())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_the_target_equals_the_oracle_bit_for_bit(dtype: str, reduction: str) -> None:
    if reduction not in DTYPE_REDUCTIONS[dtype]:
        pytest.skip(f"{dtype} has no {reduction}")
    data, indices, updates = _case(dtype, (6, 5), (9, 5), axis=0)
    function = _jitted_scatter(0, reduction)
    arrays = [jnp.asarray(a) for a in (data, indices, updates)]
    assert f"custom_call @{_jax_ffi.TARGET}" in _lowered_text(function, *arrays)
    result = np.asarray(function(*arrays))
    expected = reference_scatter_elements(data, indices, updates, axis=0, reduction=reduction)
    assert_bitwise_equal(result, expected)


@pytest.mark.parametrize(
    ("shape", "index_shape", "axis"),
    [
        ((4, 6), (4, 9), 1),  # the last axis
        ((4, 6), (4, 9), -1),
        ((3, 4, 5), (2, 7, 3), 1),  # indices smaller than data off the axis
        ((12,), (40,), 0),  # one column, many duplicates
        ((2, 3, 4), (2, 3, 4), 2),
    ],
)
@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_axes_and_shapes(
    shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int, reduction: str
) -> None:
    data, indices, updates = _case("float32", shape, index_shape, axis, seed=len(shape))
    result = _jitted_scatter(axis, reduction)(*(jnp.asarray(a) for a in (data, indices, updates)))
    expected = reference_scatter_elements(data, indices, updates, axis=axis, reduction=reduction)
    assert_bitwise_equal(np.asarray(result), expected)


def test_layouts_inside_the_jit_reach_the_target_in_c_order() -> None:
    data, indices, updates = _case("float64", (5, 7), (5, 4), axis=1, seed=3)

    @jax.jit
    def step(d: Any, i: Any, u: Any) -> Any:  # transposed and sliced operands
        return scatterx.scatter_elements(d.T.T[:, ::1], i[:, ::-1], u[:, ::-1] * 2, axis=1)

    result = step(*(jnp.asarray(a) for a in (data, indices, updates)))
    expected = reference_scatter_elements(data, indices[:, ::-1], updates[:, ::-1] * 2, axis=1)
    assert_bitwise_equal(np.asarray(result), expected)


def test_the_numba_backend_runs_on_the_target() -> None:
    data, indices, updates = _case("float32", (64, 8), (200, 8), axis=0, seed=5)
    arrays = [jnp.asarray(a) for a in (data, indices, updates)]
    for reduction in ("add", "max"):
        result = _jitted_scatter(0, reduction, backend="numba")(*arrays)
        expected = reference_scatter_elements(data, indices, updates, reduction=reduction)
        assert_bitwise_equal(np.asarray(result), expected)


def test_the_backend_chosen_at_trace_time_runs_on_xlas_buffers() -> None:
    # 80 KiB: a result the numpy backend makes with empty_aligned (smaller ones: np.copy)
    case = _case("float32", (128, 160), (2, 160), axis=0)
    data, indices, updates = (jnp.asarray(a) for a in case)
    spy = Recorder()
    with scoped_registry(spy):
        with scatterx.use_backend("recorder"):
            compiled = _jitted_scatter(0, "add").lower(data, indices, updates).compile()
        with scatterx.use_backend("numpy"):
            result = compiled(data, indices, updates).block_until_ready()
        assert len(spy.requests) == 1
        (request,) = spy.requests
        assert request.out is None  # a new result's call: XLA's buffer is lent, not out=
        assert not request.data.flags.writeable
        # No copy in or out: the backend read XLA's buffers and made its result in XLA's.
        for seen, given in zip(request.arrays, (data, indices, updates), strict=True):
            assert seen.ctypes.data == given.unsafe_buffer_pointer()
        assert spy.results[0].ctypes.data == result.unsafe_buffer_pointer()


def test_gather_on_the_target() -> None:
    data, indices, _ = _case("int32", (5, 6), (8, 6), axis=0, seed=2)
    function = jax.jit(lambda d, i: scatterx.gather_elements(d, i, axis=0))
    arrays = (jnp.asarray(data), jnp.asarray(indices))
    assert f"custom_call @{_jax_ffi.TARGET}" in _lowered_text(function, *arrays)
    assert_bitwise_equal(np.asarray(function(*arrays)), reference_gather_elements(data, indices))


def test_vmap_under_jit_is_one_call_of_the_target() -> None:
    data, indices, updates = _case("float32", (3, 4, 5), (3, 6, 5), axis=1, seed=4)
    batched = jax.jit(jax.vmap(lambda d, i, u: scatterx.scatter_elements(d, i, u, reduction="add")))
    arrays = [jnp.asarray(a) for a in (data, indices, updates)]
    assert _lowered_text(batched, *arrays).count(f"custom_call @{_jax_ffi.TARGET}") == 1
    result = np.asarray(batched(*arrays))
    for b in range(3):
        expected = reference_scatter_elements(data[b], indices[b], updates[b], reduction="add")
        assert_bitwise_equal(result[b], expected)


@pytest.mark.parametrize("operation", ["scatter", "gather"])
def test_a_bad_index_is_the_contracts_error(operation: str) -> None:
    data, indices, updates = jnp.zeros(3), jnp.asarray([1, 7]), jnp.ones(2)
    if operation == "scatter":
        function = jax.jit(lambda d, i, u: scatterx.scatter_elements(d, i, u))
        arrays: tuple[Any, ...] = (data, indices, updates)
    else:
        function = jax.jit(lambda d, i, u: scatterx.gather_elements(d, i))
        arrays = (data, indices, updates)
    with pytest.raises(IndexError) as eager:
        scatterx.scatter_elements(*(np.asarray(a) for a in (data, indices, updates)))
    with pytest.raises(Exception, match=r"IndexError: index 7 at position \(1,\)") as info:
        function(*arrays).block_until_ready()
    assert "JaxRuntimeError" in type(info.value).__name__
    if operation == "scatter":
        assert f"IndexError: {eager.value}" in str(info.value)
    good = function(data, jnp.asarray([1, 2]), updates)  # the next call runs as ever
    assert np.asarray(good).shape == ((3,) if operation == "scatter" else (2,))


def test_the_callback_serves_what_the_target_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_jax_ffi, "_handler_error", lambda: "numba is not installed")
    data, indices, updates = _case("float32", (4, 3), (5, 3), axis=0, seed=6)
    arrays = [jnp.asarray(a) for a in (data, indices, updates)]
    function = _jitted_scatter(0, "add")
    text = _lowered_text(function, *arrays)
    assert _jax_ffi.TARGET not in text
    assert "callback" in text
    expected = reference_scatter_elements(data, indices, updates, reduction="add")
    assert_bitwise_equal(np.asarray(function(*arrays)), expected)


def test_other_platforms_get_the_callback() -> None:
    data, indices, updates = (jnp.asarray(a) for a in _case("float32", (4, 3), (2, 3), axis=0))
    traced = _jitted_scatter(0, "add").trace(data, indices, updates)
    assert "scatterx_call" in str(traced.jaxpr)  # one primitive, lowered per platform
    assert f"custom_call @{_jax_ffi.TARGET}" in traced.lower().as_text()
    # Off the CPU, the host callback: JAX cannot lower one for a platform it does not
    # have here, which the target's custom call (text only) would not need.
    with pytest.raises(ValueError, match="lowering platform cuda"):
        traced.lower(lowering_platforms=("cuda",))


def test_explain_under_jit_names_the_target() -> None:
    data, indices, updates = (jnp.asarray(a) for a in _case("float32", (4, 3), (2, 3), axis=0))
    routes = []

    @jax.jit
    def step(d: Any) -> Any:
        routes.append(scatterx.explain(d, indices, updates).route)
        return d

    step(data)
    assert routes
    assert _jax_ffi.TARGET in routes[0]


def test_a_call_of_the_target_that_no_trace_made_fails_plainly() -> None:
    case = [jnp.asarray(a) for a in _case("float32", (4, 3), (2, 3), axis=0)]
    lowered = _jitted_scatter(0, "add").lower(*case).as_text()  # registers the target
    key = int(lowered.split("key = ")[1].split(" ")[0])
    data = case[0]
    result = jax.ShapeDtypeStruct(data.shape, data.dtype)
    stray = jax.jit(lambda d: jax.ffi.ffi_call(_jax_ffi.TARGET, result)(d, key=np.int64(-1)))
    with pytest.raises(Exception, match="needs the key of a traced call; got -1"):
        stray(data).block_until_ready()
    short = jax.jit(lambda d: jax.ffi.ffi_call(_jax_ffi.TARGET, result)(d, key=np.int64(key)))
    with pytest.raises(Exception, match="got 2 buffers for 4"):
        short(data).block_until_ready()


def test_a_handler_that_does_not_compile_leaves_the_callback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken() -> None:
        msg = "numba cannot lower this"
        raise RuntimeError(msg)

    monkeypatch.setattr(_jax_ffi, "_handler", broken)
    reason = _jax_ffi._register()  # the first use's answer, asked anew
    assert reason == "the FFI target's handler does not compile: numba cannot lower this"


def test_a_second_registration_is_refused_and_the_first_handler_serves() -> None:
    data, indices, updates = _case("float64", (4, 3), (5, 3), axis=0, seed=7)
    arrays = [jnp.asarray(a) for a in (data, indices, updates)]
    assert _jax_ffi._handler_error() is None  # registered by now
    kept = list(_jax_ffi._KEPT)
    reason = _jax_ffi._register()  # another handler at another address, as a racing thread's
    assert reason is not None
    assert reason.startswith("XLA refuses the FFI target: ")
    assert "Duplicate FFI handler registration" in reason
    assert _jax_ffi._KEPT[: len(kept)] == kept  # nothing XLA was given is let go
    assert _jax_ffi._handler_error() is None  # the first use's answer stands
    expected = reference_scatter_elements(data, indices, updates, reduction="mul")
    assert_bitwise_equal(np.asarray(_jitted_scatter(0, "mul")(*arrays)), expected)
