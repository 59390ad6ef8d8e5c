"""Every metadata check of contract.md section 4; builds the normalised request."""

from __future__ import annotations

import operator
import sys
from functools import lru_cache
from typing import Any

import numpy as np

from ._dtypes import REDUCTIONS, dtype_key, why_reduction_undefined
from ._request import ScatterRequest

_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _as_array(value: Any, role: str) -> Any:
    """Arrays pass through; NumPy's own objects and array-likes become plain ndarrays.

    Subclasses of ndarray (``np.memmap``...) and NumPy scalars are NumPy: they become
    ndarray views and 0-d arrays. Masked arrays are refused: what their mask means under a
    scatter is not the contract's, and a backend would either honour it or drop it.
    """
    if type(value) is np.ndarray:
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        _refuse_masked(value, role)
        return np.asarray(value)
    import array_api_compat

    if array_api_compat.is_array_api_obj(value):
        return value
    return np.asarray(value)


def _empty_sequence(value: Any) -> bool:
    """Whether ``value`` is an empty list or tuple (nested or not): it has no dtype of its own."""
    return isinstance(value, (list, tuple)) and np.size(value) == 0


def _refuse_masked(value: Any, role: str) -> None:
    masked = sys.modules.get("numpy.ma")
    if masked is not None and isinstance(value, masked.MaskedArray):
        msg = (
            f"{role} is a numpy.ma.MaskedArray: scatterx does not apply masks; pass "
            f"{role}.filled(value) to scatter the filled values, or {role}.data to ignore the mask"
        )
        raise TypeError(msg)


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


def _library(array: Any) -> str:
    """The top-level module of an array's type: ``numpy``, ``cupy``, ``torch``..."""
    return type(array).__module__.partition(".")[0]


def _check_same_library(data: Any, indices: Any, updates: Any) -> None:
    if not _library(data) == _library(indices) == _library(updates):
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


def _check_dtypes(data: Any, indices: Any, updates: Any, reduction: str) -> str:
    """Return the dtype key of a valid combination (see :func:`_dtype_key_of_call`)."""
    return _dtype_key_of_call(data.dtype, indices.dtype, updates.dtype, reduction)


# Few combinations recur, but every width of a ``U`` or ``S`` dtype is a dtype of its own:
# the memory is bounded.
@lru_cache(maxsize=256)
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
    else:
        request = ScatterRequest(
            data,
            indices,
            updates,
            hit[0],
            reduction,
            "numpy:ndarray",
            hit[1],
            _namespace(data),
            "cpu",
        )
    if request.dtype_key in _STRING_KEYS:
        _check_string_values(request.data, "data")
        _check_string_values(request.updates, "updates")
    return request


_STRING_KEYS = frozenset({"object", "StringDType"})
_is_str = np.frompyfunc(lambda value: isinstance(value, str), 1, 1)


def _check_string_values(array: Any, role: str) -> None:
    """Strings hold ``str`` only: object arrays nothing else, StringDType no missing value.

    The one check that reads values: the dtype cannot say what an object array holds, nor
    whether a StringDType with an ``na_object`` holds that missing value.
    """
    if not isinstance(array, np.ndarray) or array.size == 0:
        return
    na_object = getattr(array.dtype, "na_object", _NO_NA)
    if array.dtype.kind == "T" and na_object is _NO_NA:
        return  # a StringDType without na_object holds str only
    values = array if array.dtype.kind == "O" else array.astype(object)
    is_str = np.asarray(_is_str(values), dtype=bool)
    if bool(is_str.all()):
        return
    position = tuple(int(p) for p in np.unravel_index(int(np.argmin(is_str)), array.shape))
    value = values[position]
    if array.dtype.kind == "T":
        msg = (
            f"{role} holds the missing value {value!r} of {array.dtype} at position "
            f"{position}: the contract defines no scatter of missing strings; replace them "
            "with strings first"
        )
    else:
        msg = (
            f"{role} is an object array and must hold str only; got {value!r} "
            f"({type(value).__name__}) at position {position}"
        )
    raise TypeError(msg)


_NO_NA = object()


def _validate(data: Any, indices: Any, updates: Any, axis: Any, reduction: Any) -> ScatterRequest:
    reduction = _check_reduction(reduction)
    checked_axis = _check_axis_type(axis)
    if type(data) is type(indices) is type(updates) is np.ndarray:
        device: Any = "cpu"
    else:
        data = _as_array(data, "data")
        # NumPy takes an empty list as float64; as NumPy's own indexing does, scatterx takes
        # empty index lists as integers, and empty update lists as data's dtype.
        empty_indices, empty_updates = _empty_sequence(indices), _empty_sequence(updates)
        indices = _as_array(indices, "indices")
        updates = _as_array(updates, "updates")
        if empty_indices:
            indices = indices.astype(np.int64)
        if empty_updates and hasattr(data, "dtype"):
            updates = np.asarray(updates, dtype=data.dtype)
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
