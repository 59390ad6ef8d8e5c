"""The checks of a gather (contract.md section 10): those of section 4 that apply to it.

A gather has no updates and no reduction; its other checks, and their messages, are the
scatter's (:mod:`scatterx._validate`), remembered by the call's metadata in the same way.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ._interop import type_name
from ._libraries import library_of
from ._request import GatherRequest
from ._validate import (
    STRING_KEYS,
    Key,
    Metadata,
    _check_axis_type,
    _check_same_device,
    _check_shapes,
    check_string_values,
    checked_key,
    gather_dtype_key,
    hashable_or_none,
    layout,
    prepared,
)
from ._validate_out import check_out

_ON_CPU = ("cpu", "cpu")
#: Marks a gather's metadata: no gather's key equals a scatter's.
GATHER = "gather_elements"


def normalise_gather(data: Any, indices: Any, axis: Any, out: Any = None) -> GatherRequest:
    """Check a gather against contract.md section 10 (and ``out`` against section 7) and
    build its request.

    Raises the contract's ValueError or TypeError; never reads index values.
    """
    if type(data) is type(indices) is np.ndarray:
        request = _request(data, indices, axis, _ON_CPU, "numpy:ndarray")
    else:
        kind = type(data)
        library = library_of(kind)
        if library is not None and library_of(type(indices)) is library:
            devices = library.devices(data, indices)
            request = _request(data, indices, axis, devices, type_name(kind))
        else:
            request = _validate(data, indices, axis)
    if request.dtype_key in STRING_KEYS:
        check_string_values(request.data, "data")
    if out is not None:
        request = request._replace(out=check_out(out, request.data, request.index_shape, "indices"))
    return request


def _request(
    data: Any, indices: Any, axis: Any, devices: tuple[Any, ...], array_type: str
) -> GatherRequest:
    key: Key = (GATHER, type(data), type(axis), axis, data.shape, indices.shape)
    key = (*key, data.dtype, indices.dtype, devices, layout(data, indices))
    checked, request_key = checked_key(key, _checked)
    return GatherRequest(
        data, indices, checked.axis, array_type, checked.dtype_key, devices[0], request_key
    )


@lru_cache(maxsize=1024)
def _checked(key: Key) -> Metadata:
    """The axis and dtype key of a gather's metadata ``key``."""
    _, _, _, axis, data, indices, data_dtype, index_dtype, devices, _ = key
    _check_same_device(*devices)
    checked_axis = _check_shapes(
        tuple(data), tuple(indices), tuple(indices), _check_axis_type(axis)
    )
    return Metadata(
        checked_axis, gather_dtype_key(type(data_dtype).__module__, data_dtype, index_dtype)
    )


def _validate(data: Any, indices: Any, axis: Any) -> GatherRequest:
    """The checks of a gather that is not two plain NumPy arrays."""
    checked_axis = _check_axis_type(axis)
    (data, indices), device, (data_shape, index_shape) = prepared(data, indices)
    checked_axis = _check_shapes(data_shape, index_shape, index_shape, checked_axis)
    dtype_key = gather_dtype_key(type(data.dtype).__module__, data.dtype, indices.dtype)
    metadata = (data_shape, index_shape, data.dtype, indices.dtype, device, layout(data, indices))
    key = hashable_or_none((GATHER, type(data), checked_axis, *metadata))
    return GatherRequest(data, indices, checked_axis, type_name(type(data)), dtype_key, device, key)
