"""Eager calls on concrete JAX CPU arrays: carried early to NumPy views, results back."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx._adopt import adopt
from scatterx.libraries import jax_eager as eager
from scatterx.testing import assert_bitwise_equal, reference_scatter_elements

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def _case(rows: int = 3, columns: int = 4) -> tuple[np.ndarray[Any, Any], ...]:
    rng = np.random.default_rng(0)
    data = rng.standard_normal((rows, columns)).astype(np.float32)
    indices = rng.integers(0, rows, (2, columns)).astype(np.int32)
    return data, indices, rng.standard_normal((2, columns)).astype(np.float32)


def test_concrete_cpu_arrays_are_carried_early() -> None:
    arrays = [jnp.asarray(a) for a in _case()]
    adopted = adopt(tuple(arrays))
    assert adopted.carried is not None
    for view, given in zip(adopted.arrays, arrays, strict=True):
        assert isinstance(view, np.ndarray)
        assert view.ctypes.data == given.unsafe_buffer_pointer()
        assert not view.flags.writeable
    assert adopted.carried.route.device == arrays[0].device


def test_what_is_not_carried_early_goes_the_usual_way() -> None:
    data, indices, updates = (jnp.asarray(a) for a in _case())
    assert eager.early((data, indices.astype(jnp.int16), updates)) is None  # its own error
    gone = jnp.asarray(np.zeros((3, 4), np.float32))
    gone.delete()
    assert eager.early((gone, indices, updates)) is None
    with pytest.raises(RuntimeError, match="deleted"):
        scatterx.scatter_elements(gone, indices, updates)
    with pytest.raises(TypeError, match="int16"):
        scatterx.scatter_elements(data, indices.astype(jnp.int16), updates)


def test_a_result_jax_holds_is_not_lent_again() -> None:
    """The NumPy result's memory became the JAX array's: the result pool must not hand it
    to the next call while the JAX array lives."""
    data, indices, updates = _case(rows=2304, columns=1 << 12)  # 36 MiB: pooled, aligned
    arrays = [jnp.asarray(a) for a in (data, indices, updates)]
    first = scatterx.scatter_elements(*arrays, reduction="add")
    kept = np.array(first)
    for _ in range(4):
        scatterx.scatter_elements(*arrays, reduction="max")
    assert_bitwise_equal(np.asarray(first), kept)
    expected = reference_scatter_elements(data, indices, updates, reduction="add")
    assert_bitwise_equal(kept, expected)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_results_come_back_without_batched_device_put(
    monkeypatch: pytest.MonkeyPatch, dtype: str
) -> None:
    monkeypatch.setattr(eager, "_device_put", lambda: None)  # a jaxlib without it
    arrays = [jnp.asarray(a, dtype=dtype) if a.dtype.kind == "f" else a for a in _case()]
    arrays = [jnp.asarray(a) for a in arrays]
    result = scatterx.scatter_elements(*arrays, reduction="add")
    assert isinstance(result, jax.Array)
    assert result.dtype == jnp.dtype(dtype)
    assert result.device == arrays[0].device
    expected = reference_scatter_elements(*(np.asarray(a) for a in arrays), reduction="add")
    assert_bitwise_equal(np.asarray(result), expected)


def test_the_3x3_call_equals_the_numpy_call() -> None:
    data = np.zeros((3, 3), np.float32)
    indices = np.array([[1, 0, 2], [0, 2, 1]], np.int32)
    updates = np.array([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], np.float32)
    result = scatterx.scatter_elements(*(jnp.asarray(a) for a in (data, indices, updates)))
    assert_bitwise_equal(np.asarray(result), scatterx.scatter_elements(data, indices, updates))
