"""The checks of ``out=`` (contract.md section 7): metadata first, memory at run time.

:func:`check_out` runs with the call's other checks, before a backend is chosen: the
library, device, shape and dtype of ``out``. :func:`settled` runs on the arrays a backend
receives (NumPy's or CuPy's, after any DLPack route), just before it runs: whether ``out``
is writable, whether its strides prove its elements apart, whether it overlaps an input,
and whether it *is* ``data`` (an update in place), which the backend then sees as
``request.out is request.data``.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .._dtypes import numpy_dtype
from .._request import Request, ScatterNDRequest, ScatterRequest
from ..libraries import device_of, library_name, library_of
from ..libraries.base import type_name
from ..libraries.memory import refuse_self_overlap
from .arguments import refuse_masked

#: Libraries whose arrays cannot be written into, and why.
_IMMUTABLE = {
    "jax": "JAX arrays are immutable",
    "dask": "Dask arrays are lazy: nothing exists to write into until they are computed",
}


def check_out(out: Any, data: Any, shape: tuple[int, ...], what: str) -> Any:
    """Check ``out`` against ``data`` (contract section 7); return it as an array.

    ``shape`` is the shape the result has, ``what`` says whose shape that is.
    """
    if isinstance(out, np.ndarray):
        refuse_masked(out, "out")
        out = np.asarray(out)  # a subclass (np.memmap) as a view of its memory
    elif not hasattr(out, "shape") or not hasattr(out, "dtype"):
        msg = f"out must be an array to write the result into; got {type(out).__name__}"
        raise TypeError(msg)
    library = library_name(out)
    if library in _IMMUTABLE:
        msg = (
            f"out= cannot be a {type_name(type(out))}: {_IMMUTABLE[library]}; "
            "use the array the call returns"
        )
        raise TypeError(msg)
    if library != library_name(data):
        msg = (
            f"out must come from the array library of data; got out: {type_name(type(out))}, "
            f"data: {type_name(type(data))}"
        )
        raise TypeError(msg)
    _check_device(out, data)
    if tuple(out.shape) != shape:
        msg = f"out must have the shape of {what}, {shape}; got {tuple(out.shape)}"
        raise ValueError(msg)
    if numpy_dtype(out.dtype, "out") != numpy_dtype(data.dtype, "data"):
        msg = f"out must have the dtype of data, {data.dtype} (no casting); got {out.dtype}"
        raise TypeError(msg)
    adapter = library_of(type(out))
    if adapter is not None:
        adapter.check_out(out)
    return out


def _check_device(out: Any, data: Any) -> None:
    out_device, data_device = device_of(out), device_of(data)
    if out_device != data_device:
        msg = f"out must be on the device of data; got out: {out_device}, data: {data_device}"
        raise TypeError(msg)


def settled(request: Request) -> Request:
    """``request`` with ``out`` checked against the inputs' memory, just before a backend runs.

    Raises ValueError for a read-only ``out``, for one whose elements share memory or are
    not proven apart by its strides (:func:`refuse_self_overlap`; a stride of 0 among them,
    as torch refuses for its own ``scatter_``), for one that overlaps ``indices`` or
    ``updates``, or ``data`` without being exactly ``data``; all before anything is
    written. An ``out`` that is exactly ``data`` (the same memory, shape and strides) comes
    back as ``data`` itself. Arrays of types other than NumPy's and CuPy's are left to their
    backend (other libraries' arrays are checked here once carried to those types).
    """
    out = request.out
    if out is request.data and type(out) is np.ndarray and _in_place_ready(request):
        return request
    module = _memory_module(out)
    if module is None:
        return request
    flags = out.flags
    if module is np and not flags.writeable:
        msg = "out is read-only: scatterx writes the result into it"
        raise ValueError(msg)
    if not (flags.c_contiguous or flags.f_contiguous):  # contiguous: apart by definition
        refuse_self_overlap(out.shape, out.strides, out.itemsize)
    data = request.data
    if not isinstance(request, (ScatterRequest, ScatterNDRequest)):  # a gather
        others = {"data": data, "indices": request.indices}
    else:
        if out is not data and _same_view(module, out, data):
            request = request._replace(out=data)
        others = {"indices": request.indices, "updates": request.updates}
        if request.out is not data:
            others["data"] = data
    for role, array in others.items():
        if _overlap(module, out, array):
            msg = (
                f"out overlaps {role}: scatterx would read what it has written; "
                + ("pass out=data to update data in place, or " if role == "data" else "")
                + "pass an array of its own"
            )
            raise ValueError(msg)
    return request


def _in_place_ready(request: Request) -> bool:
    """Whether a scatter's ``out``, a plain ndarray that is ``data`` itself, passes every
    check of :func:`settled` at a glance: writable, C- or F-contiguous (no element shared,
    with no further proof), and not within the bounds of ``indices`` or ``updates``
    (NumPy's bounds test, no element-wise proof). False sends the call through the full
    checks, which decide."""
    if type(request) is not ScatterRequest:
        return False
    out = request.out
    flags = out.flags
    if not flags.writeable or not (flags.c_contiguous or flags.f_contiguous):
        return False
    return not (
        np.may_share_memory(out, request.indices) or np.may_share_memory(out, request.updates)
    )


def _memory_module(array: Any) -> Any:
    """NumPy or CuPy, the module whose functions tell ``array``'s memory; else None."""
    if isinstance(array, np.ndarray):
        return np
    if "cupy" not in sys.modules:  # no cupy array exists before cupy's import is begun
        return None
    # Imported, not looked up: another thread may be importing cupy, whose module in
    # sys.modules has no ndarray yet; the import waits until that thread has finished it.
    import cupy

    return cupy if isinstance(array, cupy.ndarray) else None


def _address(module: Any, array: Any) -> int:
    if module is np:
        return int(array.__array_interface__["data"][0])
    return int(array.data.ptr)


def _same_view(module: Any, out: Any, data: Any) -> bool:
    """Whether ``out`` is exactly ``data``: one address, shape, strides and dtype."""
    return bool(
        type(data) is type(out)
        and _address(module, out) == _address(module, data)
        and out.shape == data.shape
        and out.strides == data.strides
        and out.dtype == data.dtype
    )


#: How much work NumPy may spend proving two strided arrays share no element.
_MAX_WORK = 1 << 16


def _overlap(module: Any, out: Any, array: Any) -> bool:
    """Whether ``out`` and ``array`` share an element (when that is too hard to tell:
    yes)."""
    if type(array) is not type(out) or not module.may_share_memory(out, array):
        return False
    if module is not np:
        return bool(module.shares_memory(out, array))
    try:
        return bool(module.shares_memory(out, array, max_work=_MAX_WORK))
    except np.exceptions.TooHardError:
        return True
