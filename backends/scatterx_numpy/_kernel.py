"""Vectorised ScatterElements on NumPy: flat int64 target positions, then put or ufunc.at;
GatherElements: the same positions, then take."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from scatterx.backend import (
    ALIGNED_FROM_BYTES,
    GatherRequest,
    ScatterRequest,
    empty_aligned,
    out_of_bounds_error,
)

Array = np.ndarray[Any, Any]

# The contract's reductions as NumPy ufuncs. On bool, add is logical or, multiply logical
# and, maximum or and minimum and; on StringDType and object str, add concatenates.
_UFUNCS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
_CACHED_GRID_LIMIT = 4096
#: Up to this many indices, min and max of a list cost less than two array reductions.
_LIST_BOUNDS_LIMIT = 64


def check_bounds(indices: Array, axis: int, size: int, count: int = -1) -> bool:
    """Raise the contract's IndexError if any index is outside ``[-size, size-1]``.

    Vectorised: two reductions over ``indices`` in the common case, a third pass only
    when something is out of bounds. Returns whether any index is negative, so the caller
    can skip the wrap-around pass when none is. ``count``: the size of ``indices``, where
    the caller knows it.
    """
    if count < 0:
        count = indices.size
    if count == 0:
        return False
    if count <= _LIST_BOUNDS_LIMIT:
        values = indices.ravel().tolist()
        low, high = min(values), max(values)
    else:
        low, high = int(indices.min()), int(indices.max())
    if low < -size or high >= size:
        bad = (indices < -size) | (indices >= size)
        flat = int(np.argmax(bad))
        position = tuple(int(p) for p in np.unravel_index(flat, indices.shape))
        raise out_of_bounds_error(int(indices[position]), position, axis, size)
    return bool(low < 0)


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-ordered array of ``shape``."""
    strides = [1] * len(shape)
    for dim in range(len(shape) - 2, -1, -1):
        strides[dim] = strides[dim + 1] * shape[dim + 1]
    return tuple(strides)


def _grid(index_shape: tuple[int, ...], data_shape: tuple[int, ...], axis: int) -> Array:
    """Flat position of ``(i_0, .., 0, .., i_n)`` in C-ordered data, for every index position."""
    strides = _c_strides(data_shape)
    grid = np.zeros(index_shape, dtype=np.int64)
    for dim, (length, stride) in enumerate(zip(index_shape, strides, strict=True)):
        if dim != axis and length > 1:
            shape = [1] * len(index_shape)
            shape[dim] = length
            grid += (np.arange(length, dtype=np.int64) * stride).reshape(shape)
    return grid


@lru_cache(maxsize=256)
def _small_layout(
    index_shape: tuple[int, ...], data_shape: tuple[int, ...], axis: int
) -> tuple[Array, Array]:
    grid = _grid(index_shape, data_shape, axis)
    grid.flags.writeable = False
    return _stride(data_shape, axis), grid


def _stride(data_shape: tuple[int, ...], axis: int) -> Array:
    """The element stride of ``axis`` in C-ordered data, as a 0-d int64 array: a ufunc
    takes it as it is (a Python int is converted at every call), and it makes the
    product int64 whatever the indices' dtype."""
    stride = np.array(_c_strides(data_shape)[axis], dtype=np.int64)
    stride.flags.writeable = False
    return stride


def flat_positions(indices: Array, data_shape: tuple[int, ...], axis: int, count: int) -> Array:
    """C-order flat positions (int64) in data of the ``count`` elements of ``indices``, in
    the shape of ``indices`` (``ndarray.put`` reads them flat; ``reshape(-1)`` for others).

    Raises the contract's IndexError for the first out-of-bounds index in C order.
    """
    size = data_shape[axis]
    has_negative = check_bounds(indices, axis, size, count)
    if count <= _CACHED_GRID_LIMIT:  # small calls recur: their grids are kept
        stride, grid = _small_layout(indices.shape, data_shape, axis)
    else:
        stride, grid = _stride(data_shape, axis), _grid(indices.shape, data_shape, axis)
    # int64 arithmetic even for int32 indices: flat positions of big data pass 2**31.
    if has_negative:
        along = indices.astype(np.int64)
        along += np.where(along < 0, size, 0)
        along *= stride
    else:
        along = np.multiply(indices, stride)  # int64: the stride is
    along += grid
    return along


def _extreme_by_sorting(out: Array, flat: Array, values: Array, reduction: str) -> None:
    """max/min for dtypes without a ufunc loop (fixed-width strings), by a stable sort.

    Each target keeps the largest (or smallest) of its old value and its updates;
    equal strings are equal, so which of them wins cannot show.
    """
    order = np.lexsort((values, flat))
    targets, candidates = flat[order], values[order]
    change = targets[1:] != targets[:-1]
    pick = np.r_[change, True] if reduction == "max" else np.r_[True, change]
    targets, candidates = targets[pick], candidates[pick]
    current = out[targets]
    better = candidates > current if reduction == "max" else candidates < current
    out[targets] = np.where(better, candidates, current)


def _working_copy(data: Array, native: np.dtype[Any]) -> Array:
    """StringDType and bool data as a new C-ordered array in a form ``_apply`` takes.

    StringDType becomes an object array of str: NumPy's own StringDType loops crash in
    ``put`` on strings from different allocators and compare strings with NUL characters
    wrongly; Python's str does neither. bool becomes canonical 0/1 bytes, whatever bytes
    the input held, so every backend returns the same bits.
    """
    if native.kind == "T":
        return data.astype(object, order="C")
    return np.not_equal(data.view(np.uint8), 0, order="C")


def _copy(data: Array, native: np.dtype[Any]) -> Array:
    """A C-ordered copy of ``data`` in ``native`` byte order; aligned where that matters."""
    if data.nbytes < ALIGNED_FROM_BYTES:
        return data.copy(order="C") if native is data.dtype else data.astype(native, order="C")
    out = empty_aligned(data.shape, native)  # aligned: JAX takes it without a copy
    np.copyto(out, data)
    return out


def _writes_into(out: Array | None, native: np.dtype[Any]) -> bool:
    """Whether the result can be made in ``out`` itself: C-ordered, native, and of a dtype
    scattered as it is (bool and StringDType work on a converted copy)."""
    return (
        out is not None
        and out.flags.c_contiguous
        and out.dtype == native
        and native.kind not in "Tb"
    )


def _scatter_into(request: ScatterRequest, out: Array) -> Array:
    """Compute ``request`` in its ``out``: positions (and bounds) first, so that ``out`` is
    untouched when an index is out of bounds; then data's copy, unless ``out`` is data."""
    count = request.indices.size
    flat = flat_positions(request.indices, out.shape, request.axis, count) if count else None
    if out is not request.data:
        np.copyto(out, request.data)
    if flat is not None:
        _apply(out, flat, request.updates, request.reduction, out.dtype)
    return out


def scatter_elements(request: ScatterRequest) -> Array:
    """Compute ``request`` on NumPy arrays; ``data``, ``indices``, ``updates`` stay untouched
    (but for ``data`` given as ``out``), and a new array is returned unless ``out`` is given
    in a form written directly."""
    data: Array = request.data
    dtype = data.dtype
    count = request.indices.size
    small = data.nbytes < ALIGNED_FROM_BYTES
    if small and request.out is None and dtype.isnative and dtype.kind not in "Tb":
        out = data.copy()  # the small call's way: a copy, then the updates
        if count:
            flat = flat_positions(request.indices, data.shape, request.axis, count)
            _apply(out, flat, request.updates, request.reduction, dtype)
        return out
    native = dtype if dtype.isnative else dtype.newbyteorder("=")
    if request.out is not None and _writes_into(request.out, native):
        return _scatter_into(request, request.out)
    if native.kind in "Tb":
        out, updates = _working_copy(data, native), _working_copy(request.updates, native)
    else:
        out, updates = _copy(data, native), request.updates
    if count:
        flat = flat_positions(request.indices, data.shape, request.axis, count)
        _apply(out, flat, updates, request.reduction, out.dtype)
    return out if out.dtype == dtype else out.astype(dtype)


def _apply(out: Array, flat: Array, updates: Array, reduction: str, dtype: np.dtype[Any]) -> None:
    """Scatter into the C-contiguous ``out`` at the C-order ``flat`` positions (of the
    shape of ``updates``)."""
    if reduction == "none":
        # ndarray.put is one sequential C loop over the positions (PyArray_PutTo), taking
        # updates in C order, so the last duplicate wins; duplicate cases of the suite guard it.
        out.put(flat, updates, "wrap")  # mode, given by position: no keywords to parse
        return
    out, flat = out.reshape(-1), flat.reshape(-1)
    values = np.ascontiguousarray(updates, dtype=dtype).reshape(-1)
    if dtype.kind in "US":
        _extreme_by_sorting(out, flat, values, reduction)
    else:
        # ufunc.at is unbuffered and walks the positions in order: float add and mul
        # accumulate exactly as the contract's loop does. Integer overflow wraps silently.
        with np.errstate(all="ignore"):
            _UFUNCS[reduction].at(out, flat, values)


def gather_elements(request: GatherRequest) -> Array:
    """Gather ``request`` on NumPy arrays: a new C-ordered array of ``indices``' shape.

    ``np.take_along_axis`` on the part of ``data`` that ``indices`` cover reads ``data``
    through its strides, copying none of it; negative indices index from the end there
    too, once the bounds are checked. bool is read as canonical 0/1 bytes, whatever bytes
    ``data`` held, as the scatter reads it.
    """
    data: Array = request.data
    indices: Array = request.indices
    axis = request.axis
    check_bounds(indices, axis, data.shape[axis])
    if indices.size == 0:
        return np.empty(indices.shape, dtype=data.dtype)
    covered = tuple(
        slice(None) if dim == axis else slice(0, length) for dim, length in enumerate(indices.shape)
    )
    if data.dtype.kind == "b":
        raw = np.take_along_axis(data.view(np.uint8)[covered], indices, axis)
        return np.not_equal(raw, 0)
    out: Array = np.take_along_axis(data[covered], indices, axis)
    return out
