"""The rules of contract.md sections 4 and 10, one function each: what the checks of
:mod:`scatterx._check` are made of."""

from __future__ import annotations

import operator
import sys
from collections.abc import Hashable
from functools import lru_cache
from typing import Any

import numpy as np

from .._dtypes import (
    REDUCTIONS,
    check_index_dtype,
    data_key,
    native,
    numpy_dtype,
    why_reduction_undefined,
)
from ..libraries import device_of, library_name
from ..libraries.base import type_name

Key = tuple[Any, ...]


def as_array(value: Any, role: str) -> Any:
    """Arrays pass through; NumPy's own objects and array-likes become plain ndarrays.

    Subclasses of ndarray (``np.memmap``...) and NumPy scalars are NumPy: they become
    ndarray views and 0-d arrays. Masked arrays are refused: what their mask means under a
    scatter is not the contract's, and a backend would either honour it or drop it.
    """
    if type(value) is np.ndarray:
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        refuse_masked(value, role)
        return np.asarray(value)
    import array_api_compat

    if array_api_compat.is_array_api_obj(value):
        return value
    return np.asarray(value)


def empty_sequence(value: Any) -> bool:
    """Whether ``value`` is an empty list or tuple (nested or not): it has no dtype of its own."""
    return isinstance(value, (list, tuple)) and np.size(value) == 0


def refuse_masked(value: Any, role: str) -> None:
    """Raise TypeError for a ``numpy.ma.MaskedArray`` given as ``role``.

    Only a subclass of ndarray can be one, and only once ``numpy.ma`` began to import. That
    import may still run in another thread (numba's ``typeof``, in its compile thread,
    starts it), where ``sys.modules`` holds the module half made: the class is taken from
    the module as ``import`` returns it, which waits for that thread to finish it.
    """
    if type(value) is np.ndarray or not isinstance(value, np.ndarray):
        return
    if "numpy.ma" not in sys.modules:  # no MaskedArray exists before its module is begun
        return
    import numpy.ma

    if isinstance(value, numpy.ma.MaskedArray):
        if role == "out":  # written into: a filled copy would not receive the result
            fix = "out.data"
        else:
            fix = (
                f"{role}.filled(value) to scatter the filled values, or {role}.data to "
                "ignore the mask"
            )
        msg = f"{role} is a numpy.ma.MaskedArray: scatterx does not apply masks; pass {fix}"
        raise TypeError(msg)


def check_reduction(reduction: Any) -> str:
    if not isinstance(reduction, str) or reduction not in REDUCTIONS:
        msg = f"reduction must be one of {', '.join(map(repr, REDUCTIONS))}; got {reduction!r}"
        raise ValueError(msg)
    return reduction


def check_axis_type(axis: Any) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        msg = f"axis must be an int, got {type(axis).__name__} ({axis!r})"
        raise TypeError(msg)
    return operator.index(axis)


def check_same_library(
    roles: dict[str, Any], given: dict[str, Any] | None = None
) -> tuple[Any, ...]:
    """Check that the arrays (by role) share one library and device; return the devices.

    ``given``: what the caller passed, by role, where it was not an array (a list made a
    NumPy array): the error names its type, not NumPy's."""
    if len({library_name(a) for a in roles.values()}) > 1:
        passed = given or {}
        names = ", ".join(
            f"{role}: {type_name(type(passed.get(role, a)))}" for role, a in roles.items()
        )
        msg = (
            f"{_listed(roles)} must come from one array library; "
            f"got {names}. scatterx never moves arrays between libraries or devices"
        )
        raise TypeError(msg)
    devices = tuple(device_of(a) for a in roles.values())
    check_same_device(*devices)
    return devices


def _listed(roles: dict[str, Any]) -> str:
    *first, last = roles
    return f"{', '.join(first)} and {last}" if len(first) > 1 else f"{first[0]} and {last}"


def check_same_device(*devices: Any) -> None:
    if any(device != devices[0] for device in devices[1:]):
        roles = dict(zip(("data", "indices", "updates"), devices, strict=False))
        got = ", ".join(f"{role}: {device}" for role, device in roles.items())
        msg = f"{_listed(roles)} must be on one device; got {got}"
        raise TypeError(msg)


Shape = tuple[int, ...]


def check_shapes(data: Shape, indices: Shape, updates: Shape, axis: int) -> int:
    """Check the shapes of data, indices and updates; return the axis, non-negative."""
    rank = len(data)
    if rank < 1:
        msg = f"data must have at least one dimension: scalars have no axis (shape {data})"
        raise ValueError(msg)
    if not -rank <= axis < rank:
        msg = f"axis must be in [{-rank}, {rank - 1}] for data of rank {rank}; got axis={axis}"
        raise ValueError(msg)
    axis %= rank
    if len(indices) != rank:
        msg = (
            f"indices must have the rank of data; got indices shape {indices} and data shape {data}"
        )
        raise ValueError(msg)
    if updates != indices:
        msg = (
            "updates must have the shape of indices (no broadcasting); got updates shape "
            f"{updates} and indices shape {indices}"
        )
        raise ValueError(msg)
    for dim, (n_index, n_data) in enumerate(zip(indices, data, strict=True)):
        if dim != axis and n_index > n_data:
            msg = (
                f"indices may not be longer than data on dimension {dim} (not the axis): "
                f"indices has {n_index}, data has {n_data}"
            )
            raise ValueError(msg)
    return axis


# Few combinations recur, but every width of a ``U`` or ``S`` dtype is a dtype of its own:
# the memory is bounded.
@lru_cache(maxsize=256)
def dtype_key_of_call(
    kind: str, data_dtype: Any, index_dtype: Any, updates_dtype: Any, reduction: str
) -> str:
    """The dtype key of a call, checked; ``kind`` is the module of ``data_dtype``'s type.

    ``kind`` keeps the dtypes of different libraries apart in the cache: some (those of
    array-api-strict) warn when compared with NumPy's.
    """
    check_index_dtype(index_dtype)
    data_dtype = numpy_dtype(data_dtype, "data")
    updates_dtype = numpy_dtype(updates_dtype, "updates")
    if native(data_dtype) != native(updates_dtype):
        msg = (
            f"updates must have the dtype of data (no silent casting); got updates "
            f"{updates_dtype} and data {data_dtype}"
        )
        raise TypeError(msg)
    key = data_key(data_dtype)
    why = why_reduction_undefined(key, reduction)
    if why is not None:
        msg = f"reduction {reduction!r} is not defined for dtype {data_dtype}: {why}"
        raise TypeError(msg)
    return key


@lru_cache(maxsize=256)
def gather_dtype_key(kind: str, data_dtype: Any, index_dtype: Any) -> str:
    """The dtype key of a gather, checked (as :func:`_dtype_key_of_call`)."""
    check_index_dtype(index_dtype)
    return data_key(data_dtype)


class Metadata:
    """A call's checked metadata, one object for equal metadata while it is remembered:
    the request's ``key``, which a decision is remembered by, hashed by identity.

    Attributes
    ----------
    axis : int
        The axis, non-negative.
    dtype_key : str
        The contract's dtype key.
    """

    __slots__ = ("axis", "dtype_key")

    def __init__(self, axis: int, dtype_key: str) -> None:
        self.axis, self.dtype_key = axis, dtype_key

    def __repr__(self) -> str:
        return f"Metadata(axis={self.axis}, dtype_key={self.dtype_key!r})"


STRING_KEYS = frozenset({"object", "StringDType"})
_is_str = np.frompyfunc(lambda value: isinstance(value, str), 1, 1)


def check_string_values(array: Any, role: str, offsets: tuple[int, ...] = ()) -> None:
    """Strings hold ``str`` only: object arrays nothing else, StringDType no missing value.

    The one check that reads values: the dtype cannot say what an object array holds, nor
    whether a StringDType with an ``na_object`` holds that missing value. A backend of
    chunked arrays runs it on each block (``scatterx.backend.check_string_values``).

    Parameters
    ----------
    array : array
        The values; anything but a non-empty NumPy array passes.
    role : str
        Its role in the call (``"data"``, ``"updates"``), named by the error.
    offsets : tuple of int, optional
        Where ``array`` starts in the whole (a block of a chunked array), for the position
        the error names.

    Raises
    ------
    TypeError
        At the first value, in C order, that is not a ``str``.
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
    local = tuple(int(p) for p in np.unravel_index(int(np.argmin(is_str)), array.shape))
    value = values[local]
    position = tuple(p + o for p, o in zip(local, offsets or (0,) * len(local), strict=True))
    if array.dtype.kind == "T":
        msg = (
            f"{role} holds the missing value {value!r} of {array.dtype} at position "
            f"{position}: the contract defines no scatter or gather of missing strings; "
            "replace them with strings first"
        )
    else:
        msg = (
            f"{role} is an object array and must hold str only; got {value!r} "
            f"({type(value).__name__}) at position {position}"
        )
    raise TypeError(msg)


_NO_NA = object()


def known_shape(array: Any, role: str) -> Shape:
    """The shape of ``array``, every size known: a lazy array may not know some yet."""
    shape = tuple(array.shape)
    if all(isinstance(size, (int, np.integer)) for size in shape):
        return shape
    msg = (
        f"{role} has shape {shape}, with sizes not known yet (a Dask array after boolean "
        f"indexing, say): compute them first, with {role}.compute_chunk_sizes() for Dask"
    )
    raise ValueError(msg)


def layout(*arrays: Any) -> tuple[Any, ...] | None:
    """The arrays' strides: what tells their layouts apart, where they have them (NumPy's
    and CuPy's arrays, and so the arrays a route carries to a backend); else None.

    Part of a request's key: a backend's choice of kernels may depend on the layout.
    """
    try:
        return tuple([a.strides for a in arrays])
    except AttributeError:
        return None


def hashable_or_none(key: Key) -> Hashable | None:
    """``key``, or None where it cannot be hashed (an unhashable device): such calls are
    decided afresh each time."""
    try:
        hash(key)
    except TypeError:
        return None
    return key
