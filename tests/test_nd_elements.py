"""The ScatterND/GatherND-as-elements translation of ``scatterx.backend``, on NumPy arrays.

The numba, dask and cupy backends run ScatterND and GatherND through it: the rows' flat
positions (every index checked, the first bad one in C order raised as the numpy backend
raises it), the shapes of the elements call, and its requests, whose elements calls on
the numpy backend give the ND oracle's bits.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx._check import GATHER_ND, SCATTER_ND, check
from scatterx.backend import (
    GatherRequest,
    NDShapes,
    ScatterRequest,
    first_bad_row_index,
    lined_up,
    nd_as_gather_elements,
    nd_as_scatter_elements,
    nd_shapes,
    row_index_error,
    row_positions,
)
from scatterx.testing import assert_bitwise_equal, reference_gather_nd, reference_scatter_nd

#: (data shape, index shape) of scatters: k from 1 to ndim, empty index rows and slices.
SCATTERS = [
    ((7,), (5, 1)),
    ((4, 3, 2), (6, 1)),
    ((4, 3, 2), (2, 3, 2)),
    ((4, 3, 2), (5, 3)),
    ((4, 0), (3, 1)),
    ((4, 3), (0, 2)),
]
#: (data shape, index shape, batch_dims) of gathers.
GATHERS = [
    ((4, 3, 2), (5, 2), 0),
    ((3, 4, 2), (3, 5, 1), 1),
    ((2, 3, 4, 5), (2, 3, 6, 2), 2),
    ((0, 4), (0, 2, 1), 1),
]


def _indices(shape: tuple[int, ...], index_shape: tuple[int, ...], first: int = 0) -> Any:
    rng = np.random.default_rng(zlib.crc32(repr((shape, index_shape)).encode()))
    sizes = np.array(shape[first : first + index_shape[-1]], dtype=np.int64)
    if not sizes.all():
        return np.zeros(index_shape, np.int64)
    wrapped = rng.integers(0, 1 << 20, index_shape) % sizes
    return wrapped - sizes * rng.integers(0, 2, index_shape)  # either sign


def _positions_by_loop(indices: Any, sizes: tuple[int, ...]) -> Any:
    flat = []
    for row in indices.reshape(-1, len(sizes)):
        wrapped = tuple(int(i) % size for i, size in zip(row, sizes, strict=True))
        flat.append(np.ravel_multi_index(wrapped, sizes))
    return np.array(flat, dtype=np.int64).reshape(indices.shape[:-1])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize(("shape", "index_shape"), SCATTERS)
def test_row_positions_are_the_rows_flat_positions(
    shape: tuple[int, ...], index_shape: tuple[int, ...], dtype: Any
) -> None:
    indices = _indices(shape, index_shape).astype(dtype)
    before = indices.copy()
    sizes = shape[: index_shape[-1]]
    for checked in (False, True):
        positions = row_positions(indices, sizes, checked=checked)
        assert positions.dtype == np.int64
        assert positions.flags.c_contiguous
        assert positions.tolist() == _positions_by_loop(indices, sizes).tolist()
        assert not np.shares_memory(positions, indices)
    assert_bitwise_equal(indices, before)


@pytest.mark.parametrize(
    ("value", "column"), [(3, 0), (-4, 0), (2, 1), (-3, 1), (1 << 40, 1), (-(1 << 40), 0)]
)
def test_the_first_bad_index_raises_as_the_numpy_backend(value: int, column: int) -> None:
    data = np.zeros((3, 2, 4))
    indices = np.zeros((2, 5, 2), np.int64)
    indices[1, 3, column] = value
    indices[1, 4] = [9, 9]  # a later one, in C order
    with pytest.raises(IndexError) as numpy_error:
        scatterx.gather_nd(data, indices, backend="numpy")
    assert first_bad_row_index(indices, (3, 2)) == ((1, 3, column), value)
    with pytest.raises(IndexError) as error:
        row_positions(indices, (3, 2))
    assert str(error.value) == str(numpy_error.value)


def test_the_error_names_the_dimension_after_the_batch() -> None:
    indices = np.array([[[0], [5]]])
    assert first_bad_row_index(indices, (4,)) == ((0, 1, 0), 5)
    with pytest.raises(IndexError, match="axis 2 with size 4"):
        row_positions(indices, (4,), first=2)
    assert "axis 3 with size 2" in str(row_index_error(-3, (0, 1), 2, (4, 2)))


def test_no_bad_index() -> None:
    assert first_bad_row_index(np.array([[1, -2]]), (2, 2)) is None
    assert first_bad_row_index(np.zeros((0, 2), np.int64), (2, 2)) is None


def test_nd_shapes() -> None:
    scatter = check(
        SCATTER_ND,
        (np.zeros((4, 3, 2)), np.zeros((5, 6, 2), int), np.zeros((5, 6, 2))),
        None,
        "add",
    )
    assert nd_shapes(scatter) == NDShapes(1, 12, 30, (2,), 0, (4, 3))
    assert nd_shapes(scatter).slice_size == 2
    gather = check(GATHER_ND, (np.zeros((2, 3, 4, 5)), np.zeros((2, 3, 6, 1), int)), 2, None)
    assert nd_shapes(gather) == NDShapes(6, 4, 6, (5,), 2, (4,))


def test_lined_up_is_a_view_of_one_position_per_row() -> None:
    positions = np.arange(6, dtype=np.int64)
    indices = lined_up(positions, (2, 3, 4))
    assert indices.shape == (2, 3, 4)
    assert indices.strides[-1] == 0
    assert np.shares_memory(indices, positions)
    assert indices[1, 2].tolist() == [5, 5, 5, 5]


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
@pytest.mark.parametrize(("shape", "index_shape"), SCATTERS)
def test_the_scatter_elements_call_gives_the_oracle_bits(
    shape: tuple[int, ...], index_shape: tuple[int, ...], reduction: str
) -> None:
    rng = np.random.default_rng(3)
    indices = _indices(shape, index_shape)
    k = index_shape[-1]
    data = rng.standard_normal(shape)
    updates = rng.standard_normal(index_shape[:-1] + shape[k:])
    request = check(SCATTER_ND, (data, indices, updates), None, reduction)
    shapes = nd_shapes(request)
    m, n, s = shapes.targets, shapes.rows, shapes.slice_size
    rows = row_positions(indices, shapes.sizes).reshape(-1)
    matrix, flat_updates = data.reshape(m, s), updates.reshape(n, s)
    elements = nd_as_scatter_elements(request, matrix, lined_up(rows, (n, s)), flat_updates)
    assert isinstance(elements, ScatterRequest)
    assert (elements.axis, elements.reduction, elements.out) == (0, reduction, None)
    assert elements.dtype_key == request.dtype_key
    got = scatterx.scatter_elements(
        elements.data, elements.indices, elements.updates, axis=0, reduction=reduction
    )
    want = reference_scatter_nd(data, indices, updates, reduction)
    assert_bitwise_equal(got.reshape(shape), want)


@pytest.mark.parametrize(("shape", "index_shape", "batch"), GATHERS)
def test_the_gather_elements_call_gives_the_oracle_bits(
    shape: tuple[int, ...], index_shape: tuple[int, ...], batch: int
) -> None:
    data = np.arange(float(np.prod(shape))).reshape(shape)
    indices = _indices(shape, index_shape, batch)
    request = check(GATHER_ND, (data, indices), batch, None)
    shapes = nd_shapes(request)
    b, m, n, s = shapes.batch, shapes.targets, shapes.rows, shapes.slice_size
    rows = row_positions(indices, shapes.sizes, shapes.first)
    out = np.empty((b, n, s))
    cube = data.reshape(b, m, s)
    elements = nd_as_gather_elements(request, cube, lined_up(rows, (b, n, s)), out)
    assert isinstance(elements, GatherRequest)
    assert (elements.axis, elements.out) == (1, out)
    got = scatterx.gather_elements(elements.data, elements.indices, axis=1)
    assert_bitwise_equal(
        got.reshape(request.result_shape), reference_gather_nd(data, indices, batch)
    )
