"""The front-end: array-likes, the library and device checks, huge arrays, the result."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx.testing import assert_bitwise_equal, reference_scatter_elements


class FakeArray:
    """An array-API object of another library, for the one-library and one-device checks."""

    def __init__(self, array: Any, device: str = "fake:0") -> None:
        self._array = np.asarray(array)
        self.shape, self.ndim, self.dtype = self._array.shape, self._array.ndim, self._array.dtype
        self.device = device

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        return np


def test_lists_become_numpy_arrays() -> None:
    out = scatterx.scatter_elements([[0, 0], [0, 0]], [[1, 0]], [[5, 6]])
    assert isinstance(out, np.ndarray)
    assert out.tolist() == [[0, 6], [5, 0]]


def test_mixing_libraries_names_the_types() -> None:
    data = np.zeros((2, 2))
    with pytest.raises(TypeError, match=r"one array library.*indices: \w+:FakeArray"):
        scatterx.scatter_elements(data, FakeArray([[0, 1]]), np.ones((1, 2)))


def test_mixing_devices_names_the_devices() -> None:
    data = FakeArray(np.zeros((2, 2)), "fake:0")
    indices = FakeArray(np.zeros((1, 2), np.int64), "fake:1")
    updates = FakeArray(np.ones((1, 2)), "fake:0")
    with pytest.raises(TypeError, match=r"one device.*indices: fake:1"):
        scatterx.scatter_elements(data, indices, updates)


def test_an_array_type_no_backend_serves_is_refused_with_reasons() -> None:
    arrays = FakeArray(np.zeros(3)), FakeArray(np.zeros(1, np.int64)), FakeArray(np.ones(1))
    with pytest.raises(scatterx.BackendError, match=r"numpy: does not serve \w+:FakeArray"):
        scatterx.scatter_elements(*arrays)


def test_numpy_integer_axis_is_accepted() -> None:
    out = scatterx.scatter_elements(
        np.zeros((2, 3)), np.array([[2]]), np.ones((1, 1)), axis=np.int64(-1)
    )
    assert out[0, 2] == 1.0


def test_result_is_a_new_array_even_when_nothing_is_scattered() -> None:
    data = np.arange(6.0).reshape(2, 3)
    out = scatterx.scatter_elements(data, np.zeros((0, 3), np.int64), np.zeros((0, 3)))
    assert not np.shares_memory(out, data)
    assert_bitwise_equal(out, data)


@pytest.mark.slow  # the result is a new (3, 2**30) uint8 array: 3 GiB
def test_int32_indices_reach_beyond_two_to_the_31_elements() -> None:
    # Row 2 of a (3, 2**30) array starts at flat position 2**31, past int32.
    data = np.broadcast_to(np.zeros(1, np.uint8), (3, 2**30))
    indices = np.array([[2, 1, 0, 2]], dtype=np.int32)
    updates = np.array([[7, 8, 9, 10]], dtype=np.uint8)
    out = scatterx.scatter_elements(data, indices, updates, axis=0, reduction="add")
    assert out[2, :4].tolist() == [7, 0, 0, 10]
    assert out[1, 1] == 8
    assert out[0, 2] == 9
    assert int(out.sum(dtype=np.int64)) == 34


def test_the_oracle_raises_on_bad_indices_too() -> None:
    with pytest.raises(IndexError):
        reference_scatter_elements(np.zeros(3), np.array([3]), np.ones(1))


def test_remembered_checks_still_refuse_a_bool_axis() -> None:
    data, indices, updates = np.zeros((2, 2)), np.array([[1, 0]]), np.ones((1, 2))
    scatterx.scatter_elements(data, indices, updates, axis=1)
    with pytest.raises(TypeError, match="axis must be an int, got bool"):
        scatterx.scatter_elements(data, indices, updates, axis=True)
    with pytest.raises(ValueError, match="got 'sum'"):
        scatterx.scatter_elements(data, indices, updates, axis=1, reduction="sum")
