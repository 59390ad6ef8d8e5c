"""JAX: scatter_elements and gather_elements under jax.grad, jit and vmap (contract
section 9): check_grads to second order, the tie and zero rules, determinism."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import scatterx
from _grad_cases import REDUCTIONS, GradCase, gradcheck_cases

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
check_grads = pytest.importorskip("jax.test_util").check_grads


@pytest.fixture(autouse=True)
def _x64() -> Iterator[None]:
    with jax.enable_x64(True):
        yield


def _scatter(case: GradCase, reduction: str) -> Any:
    indices = jnp.asarray(case.indices)

    def scatter(data: Any, updates: Any) -> Any:
        # jax.test_util's finite differences hand NumPy arrays in: make them JAX's.
        return scatterx.scatter_elements(
            jnp.asarray(data), indices, jnp.asarray(updates), axis=case.axis, reduction=reduction
        )

    return scatter


@pytest.mark.parametrize("case", gradcheck_cases(), ids=lambda case: case.name)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_check_grads(case: GradCase, reduction: str) -> None:
    arguments = (jnp.asarray(case.data), jnp.asarray(case.updates))
    check_grads(_scatter(case, reduction), arguments, order=1, modes=["rev"])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_check_grads_to_second_order(reduction: str) -> None:
    # Away from ties: there the first derivative jumps, and finite differences of it diverge.
    case = gradcheck_cases()[0]
    arguments = (jnp.asarray(case.data), jnp.asarray(case.updates))
    check_grads(_scatter(case, reduction), arguments, order=2, modes=["rev"])


@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_check_grads_complex(reduction: str) -> None:
    case = gradcheck_cases()[0]
    data = jnp.asarray(case.data + 1j * case.data[::-1])
    updates = jnp.asarray(case.updates - 0.5j * case.updates)
    check_grads(_scatter(case, reduction), (data, updates), order=1, modes=["rev"])


def _grad(case: GradCase, reduction: str, seed: int = 0) -> Any:
    g = jnp.asarray(np.random.default_rng(seed).normal(size=case.data.shape))
    scatter = _scatter(case, reduction)

    def loss(data: Any, updates: Any) -> Any:
        return jnp.sum(scatter(data, updates) * g)

    return jax.grad(loss, argnums=(0, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_jit_of_grad_is_deterministic_and_equals_eager_grad(reduction: str) -> None:
    case = gradcheck_cases()[0]
    arguments = (jnp.asarray(case.data), jnp.asarray(case.updates))
    eager = _grad(case, reduction)(*arguments)
    jitted = jax.jit(_grad(case, reduction))
    first, second = jitted(*arguments), jitted(*arguments)
    for a, b, c in zip(eager, first, second, strict=True):
        assert np.array_equal(np.asarray(a).view(np.int64), np.asarray(b).view(np.int64))
        assert np.array_equal(np.asarray(b).view(np.int64), np.asarray(c).view(np.int64))


def test_rules_on_ties_zeros_and_winners() -> None:
    g = jnp.asarray([3.0, 5.0])
    data, indices = jnp.asarray([2.0, 0.0]), jnp.asarray([0, 0, 0, 1])

    def grads(reduction: str, updates: list[float], data: Any = data) -> Any:
        def loss(d: Any, u: Any) -> Any:
            return jnp.sum(scatterx.scatter_elements(d, indices, u, reduction=reduction) * g)

        return jax.grad(loss, argnums=(0, 1))(data, jnp.asarray(updates))

    d_data, d_updates = grads("max", [2.0, 1.0, 2.0, 7.0])  # three-way tie at 0
    assert d_data.tolist() == [1.0, 0.0]
    assert d_updates.tolist() == [1.0, 0.0, 1.0, 5.0]
    d_data, d_updates = grads("mul", [0.0, 5.0, 4.0, 0.0], jnp.asarray([3.0, 2.0]))
    assert d_data.tolist() == [0.0, 0.0]
    assert d_updates.tolist() == [180.0, 0.0, 0.0, 10.0]
    d_data, d_updates = grads("none", [1.0, 2.0, 3.0, 4.0])
    assert d_data.tolist() == [0.0, 0.0]
    assert d_updates.tolist() == [0.0, 0.0, 3.0, 5.0]


def test_vmap_of_grad_batches() -> None:
    case = gradcheck_cases()[0]
    rng = np.random.default_rng(9)
    batch_data = jnp.asarray(rng.normal(size=(3, *case.data.shape)))
    batch_updates = jnp.asarray(rng.normal(size=(3, *case.updates.shape)))
    grad = _grad(case, "mul")
    batched = jax.vmap(grad)(batch_data, batch_updates)
    for k in range(3):
        single = grad(batch_data[k], batch_updates[k])
        for a, b in zip(batched, single, strict=True):
            np.testing.assert_allclose(np.asarray(a[k]), np.asarray(b), rtol=1e-13)


def test_gather_grad_jit_vmap() -> None:
    rng = np.random.default_rng(4)
    data = jnp.asarray(rng.normal(size=(5, 4)))
    indices = jnp.asarray(rng.integers(-5, 5, (7, 3)))

    def gather(data: Any) -> Any:
        return scatterx.gather_elements(jnp.asarray(data), indices, axis=0)

    check_grads(gather, (data,), order=2, modes=["rev"])
    g = jnp.asarray(rng.normal(size=(7, 3)))
    grad = jax.grad(lambda d: jnp.sum(gather(d) * g))
    expected = np.zeros((5, 4))
    np.add.at(expected, (np.asarray(indices) % 5, np.arange(3)[None, :]), np.asarray(g))
    np.testing.assert_allclose(np.asarray(jax.jit(grad)(data)), expected, rtol=1e-13)
    batched = jax.vmap(grad)(jnp.stack([data, data * 2]))
    np.testing.assert_allclose(np.asarray(batched[1]), expected, rtol=1e-13)
