"""One call on the numba backend: views and layouts, the plan, the launch, the bounds error."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scatterx import ScatterRequest, out_of_bounds_error

from . import _plan, _runtime

Array = np.ndarray[Any, Any]

#: How each dtype is stored in the kernels: bool as uint8 0/1, float16 and bfloat16 as
#: their uint16 bits (their reductions decode to float32 and round back).
_FAMILY = {"bool": "bool", "float16": "half", "bfloat16": "bf16"}
_STORAGE: dict[str, np.dtype[Any]] = {
    "bool": np.dtype(np.uint8),
    "half": np.dtype(np.uint16),
    "bf16": np.dtype(np.uint16),
}


def _native(dtype: np.dtype[Any]) -> np.dtype[Any]:
    return dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype


def _kernel_ready(array: Array, dtype: np.dtype[Any]) -> bool:
    """Whether ``array`` can be handed over as is: C order, native, aligned."""
    flags = array.flags
    return bool(flags.c_contiguous and flags.aligned and array.dtype == dtype)


def _readonly(array: Array) -> Array:
    """A read-only view: every input then has one numba type, so one compiled signature."""
    view = array.view()
    view.flags.writeable = False
    return view


def _input(array: Array, dtype: np.dtype[Any], storage: np.dtype[Any]) -> Array:
    """``array`` as C-ordered native ``dtype`` viewed as ``storage``; copies only if needed."""
    if not _kernel_ready(array, dtype):
        array = np.array(array, dtype=dtype, order="C", copy=True)
    return _readonly(array.view(storage))


def _maps(
    data_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int
) -> tuple[Array, Array]:
    """Flat outer and inner positions of data for each flat outer/inner position of indices."""
    maps = []
    for part in (slice(0, axis), slice(axis + 1, None)):
        index_part, data_part = index_shape[part], data_shape[part]
        count = math.prod(index_part)
        flat = np.arange(count, dtype=np.int64)
        if index_part != data_part and count:
            flat = np.ravel_multi_index(np.unravel_index(flat, index_part), data_part)
            flat = flat.astype(np.int64)
        maps.append(_readonly(flat))
    return maps[0], maps[1]


def _three_d(array: Array, shape: tuple[int, ...], axis: int) -> Array:
    outer, rows, inner = _plan.split(shape, axis)
    return array.reshape(outer, rows, inner)


def _raise_first_bad(bad: Array, request: ScatterRequest) -> None:
    """Raise the contract's IndexError for the first out-of-bounds index in C order."""
    found = bad[bad >= 0]
    if found.size:
        position = tuple(int(p) for p in np.unravel_index(int(found.min()), request.index_shape))
        value = int(request.indices[position])
        raise out_of_bounds_error(value, position, request.axis, request.axis_size)


def scatter_elements(request: ScatterRequest) -> Array:
    """Compute ``request``; ``data``, ``indices`` and ``updates`` stay untouched."""
    data: Array = request.data
    dtype = _native(data.dtype)
    if request.n_updates == 0:
        return np.array(data, order="C", copy=True)
    family = _FAMILY.get(request.dtype_key, "plain")
    storage = _STORAGE.get(family, dtype)
    shape, index_shape, axis = request.shape, request.index_shape, request.axis
    n_threads = _runtime.num_threads()
    plan = _plan.plan(shape, index_shape, axis, storage.itemsize, n_threads)
    owners = plan.strategy == "owners"
    out = np.empty(shape, dtype=dtype)
    out3 = _three_d(out.view(storage), shape, axis)
    # One thread copies data into the new array: it takes the page faults of fresh memory,
    # which two threads touching it at once make several times slower (measured).
    np.copyto(out, data)
    index_dtype = _native(request.indices.dtype)
    arrays = (
        out3,
        _three_d(_input(request.indices, index_dtype, index_dtype), index_shape, axis),
        _three_d(_input(request.updates, dtype, storage), index_shape, axis),
        *_maps(shape, index_shape, axis),
        np.empty((plan.n_tasks, out.size + 1) if owners else (1, 1), dtype=storage),
    )
    params = (plan.band, shape[axis + 1 :] == index_shape[axis + 1 :], owners)
    kernel = _runtime.kernels()[family, request.reduction]
    bad = _runtime.launch(kernel, arrays, params, plan.n_tasks)
    _raise_first_bad(bad, request)
    return out if dtype == data.dtype else out.astype(data.dtype)
