"""ScatterND and GatherND on NumPy: each row of indices made one flat position of a slice,
then the ScatterElements kernel's put or ufunc.at over every element of those slices."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scatterx.backend import GatherNDRequest, ScatterNDRequest, out_of_bounds_error

from ._kernel import _apply, _copy, _working_copy, _writes_into

Array = np.ndarray[Any, Any]


def row_positions(indices: Array, shape: tuple[int, ...], first: int = 0) -> Array:
    """The flat position of each row of ``indices`` in the dimensions ``first`` to
    ``first + k`` of ``shape`` (``k`` the last dimension of ``indices``), as int64 of the
    shape ``indices.shape[:-1]``.

    Raises the contract's IndexError for the first index out of bounds in C order, with
    the dimension of data it indexes as the axis.
    """
    depth = indices.shape[-1]
    sizes = shape[first : first + depth]
    rows = indices.reshape(-1, depth).astype(np.int64)
    limits = np.array(sizes, dtype=np.int64)
    bad = (rows < -limits) | (rows >= limits)
    if bad.any():
        flat = int(np.argmax(bad.reshape(-1)))
        position = tuple(int(p) for p in np.unravel_index(flat, indices.shape))
        column = position[-1]
        value = int(indices[position])
        raise out_of_bounds_error(value, position, first + column, sizes[column])
    rows += np.where(rows < 0, limits, 0)
    strides = np.array([math.prod(sizes[j + 1 :]) for j in range(depth)], dtype=np.int64)
    positions: Array = (rows @ strides).reshape(indices.shape[:-1])
    return positions


def scatter_nd(request: ScatterNDRequest) -> Array:
    """Compute ``request`` on NumPy arrays: a new array, or the result in ``out``.

    The positions are computed (and the bounds checked) before anything is written; each
    row's slice then takes its updates in the rows' order, as the ScatterElements kernel
    takes its elements.
    """
    data: Array = request.data
    dtype = data.dtype
    native = dtype if dtype.isnative else dtype.newbyteorder("=")
    depth = request.depth
    slice_size = math.prod(data.shape[depth:])
    rows = row_positions(request.indices, data.shape)
    positions = rows.reshape(-1, 1) * slice_size + np.arange(slice_size, dtype=np.int64)
    updates: Array = request.updates
    out = request.out
    if _writes_into(out, native):
        if out is not data:
            np.copyto(out, data)
        target = out
    elif native.kind in "Tb":
        target, updates = _working_copy(data, native), _working_copy(updates, native)
    else:
        target = _copy(data, native)
    if positions.size:
        _apply(target, positions, updates.reshape(positions.shape), request.reduction, target.dtype)
    result: Array = target if target.dtype == dtype else target.astype(dtype)
    return result


def gather_nd(request: GatherNDRequest) -> Array:
    """Gather ``request`` on NumPy arrays: a new C-ordered array of its result shape.

    bool is read as canonical 0/1 bytes, whatever bytes ``data`` held, as the scatter
    reads it.
    """
    data: Array = request.data
    indices: Array = request.indices
    batch, depth = request.batch_dims, request.depth
    rows = row_positions(indices, data.shape, batch)
    n_batch = math.prod(data.shape[:batch])
    picked = math.prod(data.shape[batch : batch + depth])
    slice_size = math.prod(data.shape[batch + depth :])
    source = data.view(np.uint8) if data.dtype.kind == "b" else data
    blocks = source.reshape(n_batch, picked, slice_size)
    per_batch = rows.reshape(n_batch, -1) if n_batch else rows.reshape(0, 0)
    result = blocks[np.arange(n_batch)[:, None], per_batch]
    if data.dtype.kind == "b":
        result = np.not_equal(result, 0)
    shaped: Array = result.reshape(request.result_shape)  # fancy indexing made it new, C-ordered
    return shaped
