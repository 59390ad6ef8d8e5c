"""GatherElements on the GPU: one grid-stride kernel that moves each element's bits.

The kernel (``_kernels_gather.cu``) reads ``data`` and ``indices`` in place, with their own
strides, and writes a C-ordered result of the shape of ``indices`` (``out`` when it is
C-ordered, else a new array): no copy of either input unless a stride is not a whole number
of elements. Bounds are checked on the device and read back once, as the scatter's are
(``_run._raise_bad_index``); before the kernel when it writes into ``out``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scatterx.backend import GatherRequest

from . import _compile, _run

#: The grid covers at most this many waves of resident threads; each thread then loops.
WAVES = 4

#: A merged dim: (length, stride in indices, stride in data), strides in elements.
Dim = tuple[int, int, int]


def gather_elements(request: GatherRequest, checked: bool = False) -> Any:
    """Compute ``request`` on cupy arrays, on the device of ``data`` and the current stream.

    Returns ``request.out`` when it is C-ordered (its indices checked first, so that a call
    that raises leaves it untouched), else a new C-ordered cupy array of the shape of
    ``indices`` and the dtype of ``data``; bool data is read as its canonical 0/1. Raises
    the contract's IndexError for the first bad index in C order, after the call's one host
    synchronisation; ``checked``: every index is known in bounds (nothing is read back).
    """
    import cupy

    with request.data.device:
        out = _run.checked_out(request, checked)
        checked = checked or out is not None
        if out is None:
            out = cupy.empty(request.index_shape, dtype=request.data.dtype)
        if out.size == 0:
            return out
        data, data_strides = element_strides(request.data)
        indices, index_strides = element_strides(request.indices)
        dims = merged_dims(request.index_shape, index_strides, data_strides, request.axis)
        geom = _run._geometry(geometry(dims), out.device.id)
        err = cupy.full(1, _run._NO_ERROR, dtype=cupy.uint64)
        name = _compile.gather_name(data.itemsize, str(indices.dtype), data.dtype.kind == "b")
        kernel = _compile.module(_compile.GATHER).get_function(name)
        sizes = (np.int64(out.size), np.int64(request.axis_size))
        args = (out, data, indices, geom, *sizes, np.int64(data_strides[request.axis]), err)
        threads = min(out.size, WAVES * _run._device_threads(out.device.id))
        kernel(_run._blocks(threads), (_run._BLOCK,), args)
        if not checked:
            _run._raise_bad_index(err, indices, request)
        return out


def element_strides(array: Any) -> tuple[Any, tuple[int, ...]]:
    """``array`` and its strides in elements; a C-ordered copy where some stride is not whole.

    Strides may be negative or zero (reversed or broadcast views): the kernel takes them as
    they are, from the first element's address, which is what cupy passes.
    """
    itemsize = array.itemsize
    if any(stride % itemsize for stride in array.strides):
        import cupy

        array = cupy.ascontiguousarray(array)
    return array, tuple(stride // itemsize for stride in array.strides)


def merged_dims(
    index_shape: tuple[int, ...],
    index_strides: tuple[int, ...],
    data_strides: tuple[int, ...],
    axis: int,
) -> tuple[Dim, ...]:
    """The dims of ``indices`` as the kernel walks them: few, and none of length 1.

    The axis's data stride is 0 (its index, not its position, moves along data). A dim
    continues the one before it when it does in both arrays, so that both read as one.
    """
    dims: list[Dim] = []
    for dim, (length, in_index, in_data) in enumerate(
        zip(index_shape, index_strides, data_strides, strict=True)
    ):
        if length == 1:
            continue
        in_data = 0 if dim == axis else in_data
        if dims and dims[-1][1:] == (in_index * length, in_data * length):
            dims[-1] = (dims[-1][0] * length, in_index, in_data)
        else:
            dims.append((length, in_index, in_data))
    return tuple(dims)


def geometry(dims: tuple[Dim, ...]) -> tuple[int, ...]:
    """The kernel's ``geom``: the number of dims, then each dim's three numbers."""
    return (len(dims), *(value for dim in dims for value in dim))


def offsets(dims: tuple[Dim, ...], flat: int) -> tuple[int, int]:
    """Offsets in indices and in data (before the index's own) of flat result position
    ``flat``: the host-side twin of the kernel's loop, which the tests check against NumPy.
    """
    at_index = at_data = 0
    for length, in_index, in_data in reversed(dims):
        flat, position = divmod(flat, length)
        at_index += position * in_index
        at_data += position * in_data
    return at_index, at_data
