"""JAX under ``jax.jit`` with donated ``data``: the FFI target writes into data's buffer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx.testing import assert_bitwise_equal

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("numba")

ALIAS = "output_operand_aliases"


@pytest.fixture(autouse=True)
def _x64() -> Iterator[None]:
    with jax.enable_x64(True):  # int64 indices and 64-bit data stay as they are
        yield


def _case(dtype: str = "float32", seed: int = 0) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 9, (6, 5)).astype(dtype)
    indices = rng.integers(-6, 6, (9, 5)).astype(np.int64)
    return data, indices, rng.integers(0, 9, (9, 5)).astype(dtype)


def _scatter(reduction: str = "add", axis: int = 0) -> Any:
    def scatter(d: Any, i: Any, u: Any) -> Any:
        return scatterx.scatter_elements(d, i, u, axis=axis, reduction=reduction)

    return scatter


def _donated_run(function: Any, data: Any, *rest: Any) -> tuple[Any, bool]:
    """``function`` jitted with ``data`` donated, its result, and whether the result lies
    in the donated buffer."""
    donated = jnp.asarray(data)
    address = donated.unsafe_buffer_pointer()
    result = jax.jit(function, donate_argnums=0)(donated, *(jnp.asarray(a) for a in rest))
    return result, result.unsafe_buffer_pointer() == address


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_donated_data_is_updated_in_place(reduction: str, dtype: str) -> None:
    data, indices, updates = _case(dtype)
    expected = scatterx.scatter_elements(data, indices, updates, axis=0, reduction=reduction)
    result, in_place = _donated_run(_scatter(reduction), data, indices, updates)
    assert_bitwise_equal(np.asarray(result), expected)
    assert in_place


def test_the_lowering_aliases_data_only_where_donated() -> None:
    arrays = [jnp.asarray(a) for a in _case()]
    assert ALIAS in jax.jit(_scatter(), donate_argnums=0).lower(*arrays).as_text()
    assert ALIAS not in jax.jit(_scatter()).lower(*arrays).as_text()
    with pytest.warns(UserWarning, match="donated buffers were not usable"):
        text = jax.jit(_scatter(), donate_argnums=2).lower(*arrays).as_text()
    assert ALIAS not in text  # updates donated: not data's buffer


def test_without_donation_data_is_left_as_it_was() -> None:
    data, indices, updates = _case()
    kept = jnp.asarray(data)
    result = jax.jit(_scatter())(kept, jnp.asarray(indices), jnp.asarray(updates))
    assert_bitwise_equal(np.asarray(kept), data)
    expected = scatterx.scatter_elements(data, indices, updates, axis=0, reduction="add")
    assert_bitwise_equal(np.asarray(result), expected)
    assert result.unsafe_buffer_pointer() != kept.unsafe_buffer_pointer()


def test_donated_data_read_again_keeps_its_values() -> None:
    """``data`` donated but read after the call: XLA keeps a copy for the later read."""
    data, indices, updates = _case()

    def twice(d: Any, i: Any, u: Any) -> Any:
        return _scatter("add")(d, i, u), _scatter("max")(d, i, u), d * 2

    added, maxed, doubled = jax.jit(twice, donate_argnums=0)(
        jnp.asarray(data), jnp.asarray(indices), jnp.asarray(updates)
    )
    for found, reduction in ((added, "add"), (maxed, "max")):
        expected = scatterx.scatter_elements(data, indices, updates, axis=0, reduction=reduction)
        assert_bitwise_equal(np.asarray(found), expected)
    assert_bitwise_equal(np.asarray(doubled), data * 2)


def test_a_donated_scatter_nd_is_updated_in_place() -> None:
    data = np.arange(24, dtype=np.float32).reshape(4, 6)
    indices = np.array([[1], [3], [1]], dtype=np.int64)
    updates = np.ones((3, 6), dtype=np.float32)
    expected = scatterx.scatter_nd(data, indices, updates, reduction="add")

    def scatter(d: Any, i: Any, u: Any) -> Any:
        return scatterx.scatter_nd(d, i, u, reduction="add")

    result, in_place = _donated_run(scatter, data, indices, updates)
    assert_bitwise_equal(np.asarray(result), expected)
    assert in_place


def test_a_donated_batch_under_vmap_is_updated_in_place() -> None:
    data, indices, updates = _case()
    batch = np.stack([data, data + 1, data * 3])
    function = jax.vmap(_scatter("add", axis=1), in_axes=(0, None, None))
    indices, updates = indices[:, :4] % 5, updates[:, :4]
    result, in_place = _donated_run(function, batch, indices.T, updates.T)
    for element, found in zip(batch, np.asarray(result), strict=True):
        expected = scatterx.scatter_elements(element, indices.T, updates.T, axis=1, reduction="add")
        assert_bitwise_equal(found, expected)
    assert in_place


def test_a_bad_index_in_a_donated_call_raises_the_index_error() -> None:
    data, indices, updates = _case()
    indices[4, 2] = 6
    with pytest.raises(Exception, match=r"IndexError: index 6 at position \(4, 2\)"):
        _donated_run(_scatter(), data, indices, updates)[0].block_until_ready()


def test_the_gradient_of_a_donated_step() -> None:
    data, indices, updates = _case()

    def loss(d: Any, i: Any, u: Any) -> Any:
        return (_scatter("add")(d, i, u) ** 2).sum()

    expected = jax.grad(loss, argnums=(0, 2))(*(jnp.asarray(a) for a in (data, indices, updates)))
    found = jax.jit(jax.grad(loss, argnums=(0, 2)), donate_argnums=0)(
        *(jnp.asarray(a) for a in (data, indices, updates))
    )
    for got, want in zip(found, expected, strict=True):
        assert_bitwise_equal(np.asarray(got), np.asarray(want))


def test_a_gather_of_donated_data_is_not_aliased() -> None:
    data, indices, _ = _case()

    def gather(d: Any, i: Any) -> Any:
        return scatterx.gather_elements(d, i, axis=0)

    arrays = [jnp.asarray(a) for a in (data, indices)]
    jitted = jax.jit(gather, donate_argnums=0)
    with pytest.warns(UserWarning, match="donated buffers were not usable"):
        text = jitted.lower(*arrays).as_text()
    assert ALIAS not in text
    result = jitted(*arrays)
    assert_bitwise_equal(np.asarray(result), scatterx.gather_elements(data, indices, axis=0))


@pytest.mark.parametrize("reduction", ["add", "max"])
def test_the_benchmarks_donated_contestant_updates_its_own_data(reduction: str) -> None:
    """``bench.py --library jax``'s donated column: each call scatters into the last result."""
    from scatterx_bench.cases import make_case
    from scatterx_bench.libraries import donated_call, to_library

    case = make_case("last-axis-sparse", 1 / 512)
    once = scatterx.scatter_elements(*case.arrays, axis=case.axis, reduction=reduction)
    twice = scatterx.scatter_elements(
        once, case.indices, case.updates, axis=case.axis, reduction=reduction
    )
    moved = to_library(case, "jax")
    call = donated_call("numpy", moved, reduction)  # called once, warming up
    assert_bitwise_equal(np.asarray(call()), twice)
    assert_bitwise_equal(np.asarray(moved.data), case.data)  # the case's own data kept
