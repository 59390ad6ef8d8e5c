"""Every metadata check of contract.md section 4; builds the normalised request."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ._dtypes import REDUCTIONS, dtype_key, why_reduction_undefined
from ._request import ScatterRequest

_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _as_array(value: Any) -> Any:
    """Arrays pass through; array-likes (lists, scalars) become NumPy arrays."""
    if type(value) is np.ndarray:
        return value
    import array_api_compat

    if array_api_compat.is_array_api_obj(value):
        return value
    return np.asarray(value)


_TYPE_NAMES: dict[type, str] = {}


def _type_name(array_type: type) -> str:
    """``"module:qualname"`` of an array type, e.g. ``"numpy:ndarray"``."""
    name = _TYPE_NAMES.get(array_type)
    if name is None:
        module = array_type.__module__.partition(".")[0]
        name = _TYPE_NAMES.setdefault(array_type, f"{module}:{array_type.__qualname__}")
    return name


_NAMESPACES: dict[type, Any] = {}


def _namespace(data: Any) -> Any:
    """The array-api-compat namespace, looked up once per array type."""
    xp = _NAMESPACES.get(type(data))
    if xp is None:
        import array_api_compat

        xp = _NAMESPACES.setdefault(type(data), array_api_compat.array_namespace(data))
    return xp


def _device(array: Any) -> Any:
    if type(array) is np.ndarray:
        return "cpu"
    import array_api_compat

    return array_api_compat.device(array)


def _check_reduction(reduction: Any) -> str:
    if not isinstance(reduction, str) or reduction not in REDUCTIONS:
        msg = f"reduction must be one of {', '.join(map(repr, REDUCTIONS))}; got {reduction!r}"
        raise ValueError(msg)
    return reduction


def _check_axis_type(axis: Any) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        msg = f"axis must be an int, got {type(axis).__name__} ({axis!r})"
        raise TypeError(msg)
    return operator.index(axis)


def _check_same_library(data: Any, indices: Any, updates: Any) -> None:
    types = {type(data), type(indices), type(updates)}
    if len(types) > 1:
        names = ", ".join(
            f"{role}: {_type_name(type(a))}"
            for role, a in (("data", data), ("indices", indices), ("updates", updates))
        )
        msg = (
            "data, indices and updates must come from one array library; "
            f"got {names}. scatterx never moves arrays between libraries or devices"
        )
        raise TypeError(msg)
    devices = [_device(a) for a in (data, indices, updates)]
    if not (devices[0] == devices[1] == devices[2]):
        msg = (
            "data, indices and updates must be on one device; got "
            f"data: {devices[0]}, indices: {devices[1]}, updates: {devices[2]}"
        )
        raise TypeError(msg)


def _check_shapes(data: Any, indices: Any, updates: Any, axis: int) -> int:
    rank = data.ndim
    if rank < 1:
        msg = f"data must have at least one dimension: scalars have no axis (shape {data.shape})"
        raise ValueError(msg)
    if not -rank <= axis < rank:
        msg = f"axis must be in [{-rank}, {rank - 1}] for data of rank {rank}; got axis={axis}"
        raise ValueError(msg)
    axis %= rank
    if indices.ndim != rank:
        msg = (
            f"indices must have the rank of data; got indices shape {tuple(indices.shape)} "
            f"and data shape {tuple(data.shape)}"
        )
        raise ValueError(msg)
    if tuple(updates.shape) != tuple(indices.shape):
        msg = (
            "updates must have the shape of indices (no broadcasting); got updates shape "
            f"{tuple(updates.shape)} and indices shape {tuple(indices.shape)}"
        )
        raise ValueError(msg)
    for dim, (n_index, n_data) in enumerate(zip(indices.shape, data.shape, strict=True)):
        if dim != axis and n_index > n_data:
            msg = (
                f"indices may not be longer than data on dimension {dim} (not the axis): "
                f"indices has {n_index}, data has {n_data}"
            )
            raise ValueError(msg)
    return axis


def _native(dtype: np.dtype[Any]) -> np.dtype[Any]:
    return dtype if dtype.isnative else np.dtype(dtype.newbyteorder("="))


def _numpy_dtype(given: Any, role: str) -> np.dtype[Any]:
    try:
        dtype: np.dtype[Any] = np.dtype(given)
    except TypeError:
        msg = f"{role} has dtype {given!r}, which NumPy does not know"
        raise TypeError(msg) from None
    return dtype


_checked_dtypes: dict[tuple[Any, ...], str] = {}


def _check_dtypes(data: Any, indices: Any, updates: Any, reduction: str) -> str:
    """Return the dtype key of a valid combination; remembered, since only few recur."""
    combination = (data.dtype, indices.dtype, updates.dtype, reduction)
    key = _checked_dtypes.get(combination)
    if key is None:
        key = _checked_dtypes.setdefault(combination, _dtype_key_of_call(*combination))
    return key


def _dtype_key_of_call(
    data_dtype: Any, index_dtype: Any, updates_dtype: Any, reduction: str
) -> str:
    index_dtype = _numpy_dtype(index_dtype, "indices")
    if _native(index_dtype) not in _INDEX_DTYPES:
        msg = (
            f"indices must be int32 or int64; got {index_dtype}. "
            "Convert them with indices.astype(np.int64)"
        )
        raise TypeError(msg)
    data_dtype = _numpy_dtype(data_dtype, "data")
    updates_dtype = _numpy_dtype(updates_dtype, "updates")
    if _native(data_dtype) != _native(updates_dtype):
        msg = (
            f"updates must have the dtype of data (no silent casting); got updates "
            f"{updates_dtype} and data {data_dtype}"
        )
        raise TypeError(msg)
    key = dtype_key(data_dtype)
    if key is None:
        msg = f"data has dtype {data_dtype}, which ScatterElements does not define"
        raise TypeError(msg)
    why = why_reduction_undefined(key, reduction)
    if why is not None:
        msg = f"reduction {reduction!r} is not defined for dtype {data_dtype}: {why}"
        raise TypeError(msg)
    return key


_validated: dict[tuple[Any, ...], tuple[int, str]] = {}
_MAX_REMEMBERED = 1024


def _metadata_key(data: Any, indices: Any, updates: Any, axis: Any, reduction: Any) -> Any:
    """What the checks of a NumPy call depend on, or None for other calls."""
    if not type(data) is type(indices) is type(updates) is np.ndarray:
        return None
    # The types too: axis=True must not pass as axis=1 remembered.
    return (
        type(axis),
        axis,
        type(reduction),
        reduction,
        data.shape,
        indices.shape,
        updates.shape,
        data.dtype,
        indices.dtype,
        updates.dtype,
    )


def normalise(data: Any, indices: Any, updates: Any, axis: Any, reduction: Any) -> ScatterRequest:
    """Check a call against contract.md section 4 and build its request.

    Raises the contract's ValueError or TypeError; never reads index values. The checks
    depend only on metadata, so those of NumPy calls are remembered by it.
    """
    seen = _metadata_key(data, indices, updates, axis, reduction)
    try:
        hit = _validated.get(seen)
    except TypeError:  # an unhashable axis or reduction: the checks say what is wrong
        seen, hit = None, None
    if hit is None:
        request = _validate(data, indices, updates, axis, reduction)
        if seen is not None:
            if len(_validated) >= _MAX_REMEMBERED:
                _validated.clear()
            _validated[seen] = (request.axis, request.dtype_key)
        return request
    return ScatterRequest(
        data, indices, updates, hit[0], reduction, "numpy:ndarray", hit[1], _namespace(data), "cpu"
    )


def _validate(data: Any, indices: Any, updates: Any, axis: Any, reduction: Any) -> ScatterRequest:
    reduction = _check_reduction(reduction)
    checked_axis = _check_axis_type(axis)
    if type(data) is type(indices) is type(updates) is np.ndarray:
        device: Any = "cpu"
    else:
        data, indices, updates = _as_array(data), _as_array(indices), _as_array(updates)
        _check_same_library(data, indices, updates)
        device = _device(data)
    checked_axis = _check_shapes(data, indices, updates, checked_axis)
    key = _check_dtypes(data, indices, updates, reduction)
    return ScatterRequest(
        data,
        indices,
        updates,
        checked_axis,
        reduction,
        _type_name(type(data)),
        key,
        _namespace(data),
        device,
    )
