"""scatter_nd and gather_nd under JAX's transforms: jit, vmap, grad (contract sections 9, 14).

Forward results are compared bitwise with the loop oracles of :mod:`scatterx.testing`;
gradients with JAX's own (``.at[...].add``, ``.at[...].set``, indexing) on the same
inputs, integer-valued floats where duplicates make order matter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx.testing import assert_bitwise_equal, reference_gather_nd, reference_scatter_nd

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

Array = np.ndarray[Any, Any]
REDUCTIONS = ["none", "add", "mul", "max", "min"]


@pytest.fixture(params=["target", "callback"])
def route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways a traced call runs on the CPU: the XLA FFI target, the host callback."""
    if request.param == "callback":
        from scatterx._jax import ffi as _jax_ffi

        monkeypatch.setattr(_jax_ffi, "_handler_error", lambda: "the callback is asked for")
    return str(request.param)


def _scatter_case(dtype: Any = np.float32, duplicates: bool = True) -> tuple[Array, Array, Array]:
    """data (4, 3, 2), rows of one index (slices (3, 2)) and of two (slices (2,))."""
    data = (np.arange(24) % 7 - 3).astype(dtype).reshape(4, 3, 2)
    rows = [[1], [-1], [1], [0]] if duplicates else [[1], [-1], [2], [0]]
    indices = np.array(rows, dtype=np.int32)
    updates = (np.arange(24) % 5 + 1).astype(dtype).reshape(4, 3, 2)
    return data, indices, updates


def _cells_case() -> tuple[Array, Array, Array]:
    data = np.arange(24, dtype=np.float32).reshape(4, 3, 2) - 5
    indices = np.array([[[2, 1], [0, 0]], [[2, 1], [-1, 2]], [[3, 0], [2, 1]]], dtype=np.int32)
    updates = np.arange(12, dtype=np.float32).reshape(3, 2, 2) + 1
    return data, indices, updates


@pytest.mark.usefixtures("route")
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_every_reduction_under_jit_is_the_oracles(reduction: str, dtype: Any) -> None:
    for data, indices, updates in (_scatter_case(dtype), _cells_case()):
        data, updates = data.astype(dtype), updates.astype(dtype)

        @jax.jit
        def step(d: Any, i: Any, u: Any, r: str = reduction) -> Any:
            return scatterx.scatter_nd(d, i, u, reduction=r)

        got = np.asarray(step(jnp.asarray(data), jnp.asarray(indices), jnp.asarray(updates)))
        assert_bitwise_equal(got, reference_scatter_nd(data, indices, updates, reduction))
        eager = scatterx.scatter_nd(data, indices, updates, reduction=reduction)
        assert_bitwise_equal(got, eager)


@pytest.mark.usefixtures("route")
@pytest.mark.parametrize("batch_dims", [0, 1, 2])
def test_gather_nd_under_jit_is_the_oracles(batch_dims: int) -> None:
    rng = np.random.default_rng(batch_dims)
    data = rng.standard_normal((3, 4, 5, 2)).astype(np.float32)
    for depth in range(1, 4 - batch_dims):
        high = data.shape[batch_dims : batch_dims + depth]
        columns = [rng.integers(-size, size, (*data.shape[:batch_dims], 2)) for size in high]
        indices = np.stack(columns, axis=-1).astype(np.int32)
        got = jax.jit(lambda d, i: scatterx.gather_nd(d, i, batch_dims=batch_dims))(
            jnp.asarray(data), jnp.asarray(indices)
        )
        assert_bitwise_equal(np.asarray(got), reference_gather_nd(data, indices, batch_dims))


@pytest.mark.usefixtures("route")
def test_out_of_range_under_jit_is_the_eager_error() -> None:
    data, indices, updates = _cells_case()
    indices[1, 1, 1] = 5
    with pytest.raises(IndexError) as eager:
        scatterx.scatter_nd(data, indices, updates)
    arrays = (jnp.asarray(a) for a in (data, indices, updates))
    with pytest.raises(Exception, match="IndexError") as info:
        jax.block_until_ready(jax.jit(scatterx.scatter_nd)(*arrays))
    assert str(eager.value) in str(info.value)
    gathered = (data[:3], indices[:, :, 1:])  # index 5 at (1, 1, 0), axis 1 of size 3
    with pytest.raises(IndexError) as eager:
        scatterx.gather_nd(*gathered, batch_dims=1)
    with pytest.raises(Exception, match="IndexError") as info:
        jax.block_until_ready(
            jax.jit(lambda d, i: scatterx.gather_nd(d, i, batch_dims=1))(
                *(jnp.asarray(a) for a in gathered)
            )
        )
    assert str(eager.value) in str(info.value)
    assert "for axis 1 with size 3" in str(info.value)


@pytest.mark.usefixtures("route")
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_vmap_of_scatter_nd_is_each_elements_call(reduction: str) -> None:
    data, indices, updates = _cells_case()
    batch_data = np.stack([data, data * 2, -data])
    batch_updates = np.stack([updates, updates + 3, updates * 0])
    batch_indices = np.stack([indices, indices[::-1], indices])
    batched = jax.vmap(lambda d, i, u: scatterx.scatter_nd(d, i, u, reduction=reduction))(
        *(jnp.asarray(a) for a in (batch_data, batch_indices, batch_updates))
    )
    for b in range(3):
        one = reference_scatter_nd(batch_data[b], batch_indices[b], batch_updates[b], reduction)
        assert_bitwise_equal(np.asarray(batched[b]), one)


def test_nested_vmap_with_unbatched_arguments() -> None:
    data = np.arange(2 * 3 * 4 * 2, dtype=np.float32).reshape(2, 3, 4, 2)
    indices = np.array([[3], [0], [3]], dtype=np.int32)
    updates = np.arange(6, dtype=np.float32).reshape(3, 2)
    rows = jnp.asarray(indices)

    def one(d: Any) -> Any:
        scattered = scatterx.scatter_nd(d, rows, jnp.asarray(updates), reduction="add")
        return scatterx.gather_nd(scattered, rows)

    result = jax.vmap(jax.vmap(one))(jnp.asarray(data))
    for a in range(2):
        for b in range(3):
            scattered = reference_scatter_nd(data[a, b], indices, updates, "add")
            expected = reference_gather_nd(scattered, indices)
            assert_bitwise_equal(np.asarray(result[a, b]), expected)


@pytest.mark.usefixtures("route")
@pytest.mark.parametrize("batch_dims", [0, 1])
def test_vmap_of_gather_nd(batch_dims: int) -> None:
    data = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    indices = np.array([[[1], [3]], [[0], [-1]], [[2], [2]], [[4], [0]]], dtype=np.int32)
    if batch_dims == 0:
        indices = indices % 4
    batched = jax.vmap(
        lambda d: scatterx.gather_nd(d, jnp.asarray(indices), batch_dims=batch_dims)
    )(jnp.asarray(data))
    for b in range(3):
        expected = reference_gather_nd(data[b], indices, batch_dims)
        assert_bitwise_equal(np.asarray(batched[b]), expected)


@pytest.mark.usefixtures("route")
@pytest.mark.parametrize("operation", ["scatter", "gather"])
def test_vmap_errors_name_the_users_axis_and_position(operation: str) -> None:
    data = np.zeros((3, 4, 5), np.float32)
    indices = np.zeros((3, 2, 2), np.int32)
    indices[1, 1, 1] = 9  # the first bad index in C order, in batch element 1
    indices[2, 0, 0] = -9
    updates = np.ones((3, 2), np.float32)

    def one(d: Any, i: Any, u: Any) -> Any:
        if operation == "scatter":
            return scatterx.scatter_nd(d, i, u)
        return scatterx.gather_nd(d, i)

    with pytest.raises(IndexError) as eager:
        one(data[1], indices[1], updates[1])
    batched = (jnp.asarray(a) for a in (data, indices, updates))
    with pytest.raises(Exception, match="IndexError") as info:
        jax.block_until_ready(jax.vmap(one)(*batched))
    wanted = f"{eager.value} (in batch element 1)"
    assert wanted in str(info.value), f"wanted {wanted!r}; got {info.value}"


def _jax_gather_nd(data: Any, indices: Any, batch_dims: int) -> Any:
    """JAX's own GatherND: indexing, vmapped over the batch dimensions."""
    if batch_dims:
        return jax.vmap(lambda d, i: _jax_gather_nd(d, i, batch_dims - 1))(data, indices)
    return data[tuple(indices[..., c] for c in range(indices.shape[-1]))]


def _jax_scatter_nd(data: Any, indices: Any, updates: Any, reduction: str) -> Any:
    """JAX's own ScatterND of ``add`` and ``none``."""
    at = data.at[tuple(indices[..., c] for c in range(indices.shape[-1]))]
    return at.add(updates) if reduction == "add" else at.set(updates)


def _weights(shape: tuple[int, ...]) -> Any:
    return jnp.asarray((np.arange(np.prod(shape)) % 11 - 4).reshape(shape), jnp.float32)


def _assert_same_gradients(got: tuple[Any, ...], expected: tuple[Any, ...]) -> None:
    for mine, theirs in zip(got, expected, strict=True):
        assert_bitwise_equal(np.asarray(mine), np.asarray(theirs))


@pytest.mark.usefixtures("route")
@pytest.mark.parametrize("duplicates", [True, False])
@pytest.mark.parametrize("reduction", ["none", "add"])
def test_scatter_nd_gradients_are_jaxs(reduction: str, duplicates: bool) -> None:
    cases = [_scatter_case(duplicates=duplicates)]
    if duplicates:
        cases.append(_cells_case())
    for data, indices, updates in cases:
        rows, weights = jnp.asarray(indices), _weights(data.shape)

        def loss(
            d: Any, u: Any, scatter: Callable[..., Any], rows: Any = rows, weights: Any = weights
        ) -> Any:
            return (scatter(d, rows, u) * weights).sum()

        def ours(d: Any, i: Any, u: Any) -> Any:
            return scatterx.scatter_nd(d, i, u, reduction=reduction)

        def theirs(d: Any, i: Any, u: Any) -> Any:
            return _jax_scatter_nd(d, i, u, reduction)

        args = (jnp.asarray(data), jnp.asarray(updates))
        expected = jax.grad(loss, (0, 1))(*args, theirs)
        _assert_same_gradients(jax.grad(loss, (0, 1))(*args, ours), expected)
        jitted = jax.jit(jax.grad(lambda d, u: loss(d, u, ours), (0, 1)))
        _assert_same_gradients(jitted(*args), expected)
        value, grads = jax.value_and_grad(loss, (0, 1))(*args, ours)
        assert_bitwise_equal(np.asarray(value), np.asarray(loss(*args, theirs)))
        _assert_same_gradients(grads, expected)


def test_none_gradient_goes_to_the_last_duplicate() -> None:
    data, indices, updates = _scatter_case()  # rows 0 and 2 both name slice 1
    weights = _weights(data.shape)
    d_updates = jax.grad(
        lambda u: (scatterx.scatter_nd(jnp.asarray(data), jnp.asarray(indices), u) * weights).sum()
    )(jnp.asarray(updates))
    assert not np.asarray(d_updates[0]).any()
    assert_bitwise_equal(np.asarray(d_updates[2]), np.asarray(weights[1]))


@pytest.mark.usefixtures("route")
@pytest.mark.parametrize("batch_dims", [0, 1, 2])
def test_gather_nd_gradients_are_jaxs(batch_dims: int) -> None:
    data = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    shape = (*data.shape[:batch_dims], 3, 1)
    indices = (np.arange(np.prod(shape)) % 2 - 1).reshape(shape).astype(np.int32)
    rows = jnp.asarray(indices)
    weights = _weights(reference_gather_nd(data, indices, batch_dims).shape)

    def loss(d: Any, gather: Callable[..., Any]) -> Any:
        return (gather(d, rows, batch_dims) * weights).sum()

    def ours(d: Any, i: Any, b: int) -> Any:
        return scatterx.gather_nd(d, i, batch_dims=b)

    expected = jax.grad(loss)(jnp.asarray(data), _jax_gather_nd)
    assert_bitwise_equal(np.asarray(jax.grad(loss)(jnp.asarray(data), ours)), np.asarray(expected))
    jitted = jax.jit(jax.grad(lambda d: loss(d, ours)))(jnp.asarray(data))
    assert_bitwise_equal(np.asarray(jitted), np.asarray(expected))


def test_grad_of_vmap_and_vmap_of_grad() -> None:
    data, indices, updates = _cells_case()
    rows = jnp.asarray(indices)
    batch = jnp.stack([jnp.asarray(data), jnp.asarray(data) + 1])

    def loss(d: Any, scatter: Callable[..., Any]) -> Any:
        return (scatter(d, rows, jnp.asarray(updates), "add") ** 2).sum()

    def ours(d: Any, i: Any, u: Any, r: str) -> Any:
        return scatterx.scatter_nd(d, i, u, reduction=r)

    expected = jax.vmap(jax.grad(lambda d: loss(d, _jax_scatter_nd)))(batch)
    got = jax.vmap(jax.grad(lambda d: loss(d, ours)))(batch)
    assert_bitwise_equal(np.asarray(got), np.asarray(expected))
    got = jax.grad(lambda b: jax.vmap(lambda d: loss(d, ours))(b).sum())(batch)
    assert_bitwise_equal(np.asarray(got), np.asarray(expected))


def test_grad_of_a_gradient_is_jaxs() -> None:
    data, indices, _ = _cells_case()
    rows = jnp.asarray(indices)

    def loss(d: Any, gather: Callable[..., Any]) -> Any:
        return (gather(d, rows, 0) ** 3).sum()

    def ours(d: Any, i: Any, b: int) -> Any:
        return scatterx.gather_nd(d, i, batch_dims=b)

    def second(gather: Callable[..., Any]) -> Any:
        return jax.grad(lambda d: jax.grad(loss)(d, gather).sum())(jnp.asarray(data))

    assert_bitwise_equal(np.asarray(second(ours)), np.asarray(second(_jax_gather_nd)))


@pytest.mark.parametrize("reduction", ["mul", "max", "min"])
def test_other_reductions_have_no_gradient_yet(reduction: str) -> None:
    data, indices, updates = (jnp.asarray(a) for a in _scatter_case())
    loss = jax.grad(lambda d: scatterx.scatter_nd(d, indices, updates, reduction=reduction).sum())
    with pytest.raises(NotImplementedError, match=f"reduction={reduction!r}"):
        loss(data)
    # Their forward runs under every transform that needs no gradient.
    jax.jit(lambda d: scatterx.scatter_nd(d, indices, updates, reduction=reduction))(data)
