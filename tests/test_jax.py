"""JAX arrays: eager through DLPack, traced (jit, vmap) as a host callback (contract section 6)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import scatterx
from _backends import Recorder
from scatterx.testing import reference_scatter_elements, scoped_registry

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def _case(columns: int = 4) -> tuple[np.ndarray[Any, Any], ...]:
    data = np.arange(3 * columns, dtype=np.float32).reshape(3, columns)
    indices = np.tile(np.array([[1], [0]], dtype=np.int32), (1, columns))
    indices[:, 2:] = np.array([[2], [1]])
    updates = np.arange(2 * columns, dtype=np.float32).reshape(2, columns) + 1.5
    return data, indices, updates


def test_eager_jax_arrays_both_ways_without_a_copy_never_written() -> None:
    data, indices, updates = _case(columns=1 << 14)  # 192 KiB: results this big are aligned
    arrays = [jnp.asarray(a) for a in (data, indices, updates)]
    spy = Recorder()
    with scoped_registry(spy):
        result = scatterx.scatter_elements(*arrays, reduction="add")
    assert isinstance(result, jax.Array)
    assert result.device == arrays[0].device
    assert result.dtype == jnp.float32
    expected = reference_scatter_elements(data, indices, updates, reduction="add")
    assert np.array_equal(np.asarray(result), expected)
    (request,) = spy.requests
    for seen, given in zip(request[:3], arrays, strict=True):
        assert seen.ctypes.data == given.unsafe_buffer_pointer()
        assert not seen.flags.writeable  # JAX buffers are never written
    # JAX took the result's buffer: results are 64-byte aligned, as JAX's DLPack needs.
    assert result.unsafe_buffer_pointer() == spy.results[0].ctypes.data


def test_jax_bfloat16() -> None:
    data = jnp.linspace(-3, 3, 8, dtype=jnp.bfloat16)
    indices = jnp.asarray([1, 1, 7], dtype=jnp.int32)
    updates = jnp.asarray([0.1, 0.2, 0.3], dtype=jnp.bfloat16)
    result = scatterx.scatter_elements(data, indices, updates, reduction="add")
    assert result.dtype == jnp.bfloat16
    expected = reference_scatter_elements(
        np.asarray(data), np.asarray(indices), np.asarray(updates), reduction="add"
    )
    assert np.array_equal(np.asarray(result).view(np.uint16), expected.view(np.uint16))


def test_under_jit_the_call_is_a_host_callback() -> None:
    data, indices, updates = _case()

    @jax.jit
    def step(d: Any, i: Any, u: Any) -> Any:
        return scatterx.scatter_elements(d, i, u, reduction="add") * 2

    result = step(jnp.asarray(data), jnp.asarray(indices), jnp.asarray(updates))
    expected = reference_scatter_elements(data, indices, updates, reduction="add") * 2
    assert np.array_equal(np.asarray(result), expected)


def test_under_jit_a_constant_joins_the_traced_arguments() -> None:
    data, indices, updates = _case()
    constant = jnp.asarray(indices)
    result = jax.jit(lambda d, u: scatterx.scatter_elements(d, constant, u))(
        jnp.asarray(data), jnp.asarray(updates)
    )
    assert np.array_equal(np.asarray(result), reference_scatter_elements(data, indices, updates))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_vmap_batches_in_one_scatter(axis: int) -> None:
    rng = np.random.default_rng(7)
    data = rng.standard_normal((5, 3, 4)).astype(np.float32)
    indices = rng.integers(0, data.shape[1:][axis], size=(5, 2, 4)).astype(np.int32)
    if axis != 0:
        indices = rng.integers(0, 4, size=(5, 3, 6)).astype(np.int32)
    updates = rng.standard_normal(indices.shape).astype(np.float32)
    spy = Recorder()
    with scoped_registry(spy):
        batched = jax.vmap(
            lambda d, i, u: scatterx.scatter_elements(d, i, u, axis=axis, reduction="add")
        )(jnp.asarray(data), jnp.asarray(indices), jnp.asarray(updates))
        batched.block_until_ready()
    for b in range(5):
        one = reference_scatter_elements(
            data[b], indices[b], updates[b], axis=axis, reduction="add"
        )
        assert np.array_equal(np.asarray(batched[b]), one)
    assert len(spy.requests) == 1  # the whole batch in one call


def test_nested_vmap_and_unbatched_arguments() -> None:
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    indices = np.array([3, 0, 3], dtype=np.int32)
    updates = np.array([1.0, 2.0, 4.0], dtype=np.float32)

    def one(d: Any) -> Any:
        return scatterx.scatter_elements(
            d, jnp.asarray(indices), jnp.asarray(updates), reduction="add"
        )

    result = jax.vmap(jax.vmap(one))(jnp.asarray(data))
    for a in range(2):
        for b in range(3):
            expected = reference_scatter_elements(data[a, b], indices, updates, reduction="add")
            assert np.array_equal(np.asarray(result[a, b]), expected)


@pytest.mark.parametrize("route", ["target", "callback"])
@pytest.mark.parametrize(("operation", "axis"), [("scatter", 0), ("gather", -1), ("gather", 1)])
def test_vmap_errors_name_the_users_axis_and_position(
    route: str, operation: str, axis: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Contract section 12: the eager call's error for the bad batch element, and which
    element it is, not the batched call's position and shifted axis."""
    if route == "callback":
        from scatterx._jax import ffi as _jax_ffi

        monkeypatch.setattr(_jax_ffi, "_handler_error", lambda: "the callback is asked for")
    data = np.zeros((4, 4, 5), np.float32)
    index_shape = [4, 4, 5]
    index_shape[1 + axis % 2] += 2
    indices = np.zeros(index_shape, np.int32)
    indices[2, 1, 4] = 9  # the first bad index in C order, in batch element 2
    indices[2, 3, 0] = -8
    indices[3, 0, 0] = -9
    updates = np.ones(indices.shape, np.float32)

    def one(d: Any, i: Any, u: Any) -> Any:
        if operation == "scatter":
            return scatterx.scatter_elements(d, i, u, axis=axis)
        return scatterx.gather_elements(d, i, axis=axis)

    element = 2
    with pytest.raises(IndexError) as eager:
        one(data[element], indices[element], updates[element])
    batched = (jnp.asarray(a) for a in (data, indices, updates))
    with pytest.raises(Exception, match="IndexError") as info:
        jax.block_until_ready(jax.vmap(one)(*batched))
    wanted = f"{eager.value} (in batch element {element})"
    assert wanted in str(info.value), f"wanted {wanted!r}; got {info.value}"


def test_nested_vmap_errors_name_the_element_of_each_batch() -> None:
    data = np.zeros((2, 3, 5), np.float32)
    indices = np.zeros((2, 3, 2), np.int64)
    indices[1, 2, 1] = 5

    def one(d: Any, i: Any) -> Any:
        return scatterx.gather_elements(d, i, axis=0)

    with pytest.raises(IndexError) as eager:
        one(data[1, 2], indices[1, 2])
    with pytest.raises(Exception, match="IndexError") as info:
        jax.block_until_ready(jax.vmap(jax.vmap(one))(jnp.asarray(data), jnp.asarray(indices)))
    assert f"{eager.value} (in batch element (1, 2))" in str(info.value)


def test_traced_calls_keep_the_backend_chosen_at_trace_time() -> None:
    data, indices, updates = (jnp.asarray(a) for a in _case())
    spy = Recorder()
    with scoped_registry(spy):
        with scatterx.use_backend("numpy"):
            traced = jax.jit(lambda d, i, u: scatterx.scatter_elements(d, i, u))
            lowered = traced.lower(data, indices, updates).compile()
        lowered(data, indices, updates).block_until_ready()
        assert not spy.requests  # numpy was chosen while tracing, in use_backend
        decision = jax.jit(lambda d: (print_decision(d, indices, updates), d)[1])
        decision(data)


def print_decision(data: Any, indices: Any, updates: Any) -> None:
    decision = scatterx.explain(data, indices, updates)
    assert decision.route is not None
    assert "jax.pure_callback" in decision.route
    assert decision.backend == "recorder"


def test_checks_run_at_trace_time_and_bounds_at_run_time() -> None:
    with pytest.raises(TypeError, match="int32 or int64"):
        jax.jit(scatterx.scatter_elements)(jnp.zeros(3), jnp.ones(1), jnp.ones(1))
    with pytest.raises(ValueError, match="updates must have the shape of indices"):
        jax.jit(scatterx.scatter_elements)(jnp.zeros(3), jnp.asarray([1]), jnp.ones(2))
    bad = jax.jit(scatterx.scatter_elements)
    with pytest.raises(Exception, match=r"IndexError: index 7 at position \(0,\)") as info:
        bad(jnp.zeros(3), jnp.asarray([7]), jnp.ones(1)).block_until_ready()
    assert "JaxRuntimeError" in type(info.value).__name__


def test_eager_bounds_error_is_the_contracts() -> None:
    with pytest.raises(IndexError, match=r"index 7 at position \(0,\)"):
        scatterx.scatter_elements(jnp.zeros(3), jnp.asarray([7]), jnp.ones(1))


def test_mixing_jax_and_numpy_is_refused() -> None:
    with pytest.raises(TypeError, match="one array library"):
        scatterx.scatter_elements(jnp.zeros(3), np.array([1]), jnp.ones(1))


_SHARDED = """
import numpy as np, jax, jax.numpy as jnp, scatterx
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
jax.config.update("jax_enable_x64", True)
mesh = Mesh(np.array(jax.devices()), ("x",))
rng = np.random.default_rng(0)
D = rng.random((6, 4), dtype=np.float32)
I, U = rng.integers(-6, 6, (5, 4)), rng.random((5, 4), dtype=np.float32)
for spec in (P(), P(None, "x")):
    d, i, u = (jax.device_put(jnp.asarray(a), NamedSharding(mesh, spec)) for a in (D, I, U))
    assert len(d.devices()) == 2
    for red in ("none", "add", "max"):
        got = scatterx.scatter_elements(d, i, u, axis=0, reduction=red)
        want = scatterx.scatter_elements(D, I, U, axis=0, reduction=red, backend="numpy")
        assert isinstance(got, jax.Array) and np.asarray(got).tobytes() == want.tobytes()
    got = scatterx.gather_elements(d, i, axis=0)
    assert np.asarray(got).tobytes() == scatterx.gather_elements(D, I, axis=0).tobytes()
    scatterx.explain(d, i, u, axis=0)
    bad = jax.device_put(jnp.asarray(np.where(I == 3, 6, I)), NamedSharding(mesh, spec))
    try:
        np.asarray(scatterx.scatter_elements(d, bad, u, axis=0))
    except Exception as exc:  # XLA's error, as under jax.jit (contract section 6)
        assert "index 6 at position" in str(exc), exc
    else:
        raise AssertionError("no error for an index out of bounds")
print("ok")
"""


def test_arrays_over_several_devices_run_as_the_traced_call() -> None:
    """An array sharded over two (host) devices has a sharding, not a device: it runs
    the way ``jax.jit`` runs it, where an AttributeError came before."""
    from _subprocess import run_python

    flags = "--xla_force_host_platform_device_count=2"
    assert run_python(_SHARDED, env={"XLA_FLAGS": flags}).strip() == "ok"
