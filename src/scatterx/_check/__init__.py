"""The checks of a call (contract.md sections 4, 7 and 10), one table row per operation;
each builds the normalised request that a backend receives.

The scatter and the gather are checked by the same code: an :class:`Operation` says what
they differ in (their arrays, whether they reduce, the dtype rule, whose shape the result
has, which arrays' strings are read). The checks of a call of one library's arrays depend
on their metadata alone (with the arrays' layout), so they are remembered by it: that
metadata is the request's ``key``. The rules themselves are :mod:`scatterx._check.arguments`'.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable
from functools import lru_cache
from typing import Any, NamedTuple, cast

import numpy as np

from .._request import GatherNDRequest, GatherRequest, Request, ScatterNDRequest, ScatterRequest
from ..libraries import library_of
from ..libraries.base import NUMPY, type_name
from .arguments import (
    STRING_KEYS,
    Key,
    Metadata,
    as_array,
    check_axis_type,
    check_reduction,
    check_same_device,
    check_same_library,
    check_shapes,
    check_string_values,
    dtype_key_of_call,
    empty_sequence,
    gather_dtype_key,
    hashable_or_none,
    known_shape,
    layout,
)
from .nd import check_batch_dims_type, check_gather_nd_shapes, check_scatter_nd_shapes
from .out import check_out


def _scatter_dtype_key(dtypes: tuple[Any, ...], reduction: str) -> str:
    return dtype_key_of_call(type(dtypes[0]).__module__, *dtypes, reduction)


def _gather_dtype_key(dtypes: tuple[Any, ...], reduction: None) -> str:
    return gather_dtype_key(type(dtypes[0]).__module__, *dtypes)


class Operation(NamedTuple):
    """What the checks of one operation differ in: a row of the table.

    Attributes
    ----------
    name : str
        The function's name; it marks the call's key, so no gather's equals a scatter's.
    roles : tuple of str
        Its arrays, in order.
    reduces : bool
        Whether it takes a reduction.
    dtype_key : callable
        The dtype key of its arrays' dtypes and reduction, checked.
    result : str
        Whose shape the result (and so ``out``) has, in the words of an error.
    strings : tuple of str
        The roles whose string values are read (object and StringDType arrays).
    make : callable
        The request of (arrays, axis, reduction, array type, dtype key, device, key).
    scalar : callable
        Its integer argument (``axis``, ``batch_dims``; None for ScatterND), its type
        checked before anything else.
    shapes : callable
        The shapes of its arrays and that argument, checked: the argument, normalised.
    """

    name: str
    roles: tuple[str, ...]
    reduces: bool
    dtype_key: Callable[[tuple[Any, ...], Any], str]
    result: str
    strings: tuple[str, ...]
    make: Callable[..., Request]
    scalar: Callable[[Any], Any]
    shapes: Callable[[tuple[Any, ...], Any], int]


def _scatter_request(arrays: tuple[Any, ...], axis: int, reduction: str, *rest: Any) -> Request:
    return ScatterRequest._make((*arrays, axis, reduction, *rest, None))


def _gather_request(arrays: tuple[Any, ...], axis: int, reduction: None, *rest: Any) -> Request:
    return GatherRequest._make((*arrays, axis, *rest, None))


def _scatter_nd_request(
    arrays: tuple[Any, ...], unused: int, reduction: str, *rest: Any
) -> Request:
    return ScatterNDRequest._make((*arrays, reduction, *rest, None))


def _gather_nd_request(
    arrays: tuple[Any, ...], batch_dims: int, unused: None, *rest: Any
) -> Request:
    return GatherNDRequest._make((*arrays, batch_dims, *rest, None))


def _checked_shapes(shapes: tuple[Any, ...], axis: Any) -> int:
    """The axis, checked with the shapes (a gather's result has the shape of indices)."""
    data, indices, *updates = (tuple(shape) for shape in shapes)
    return check_shapes(data, indices, updates[0] if updates else indices, check_axis_type(axis))


def _none(value: Any) -> None:
    return None


SCATTER = Operation(
    "scatter_elements",
    ("data", "indices", "updates"),
    True,
    _scatter_dtype_key,
    "data",
    ("data", "updates"),
    _scatter_request,
    check_axis_type,
    _checked_shapes,
)
GATHER = Operation(
    "gather_elements",
    ("data", "indices"),
    False,
    _gather_dtype_key,
    "indices",
    ("data",),
    _gather_request,
    check_axis_type,
    _checked_shapes,
)
SCATTER_ND = Operation(
    "scatter_nd",
    ("data", "indices", "updates"),
    True,
    _scatter_dtype_key,
    "data",
    ("data", "updates"),
    _scatter_nd_request,
    _none,
    check_scatter_nd_shapes,
)
GATHER_ND = Operation(
    "gather_nd",
    ("data", "indices"),
    False,
    _gather_dtype_key,
    "the result, indices.shape[:-1] + data.shape[batch_dims + k:]",
    ("data",),
    _gather_nd_request,
    check_batch_dims_type,
    check_gather_nd_shapes,
)
OPERATIONS = {operation.name: operation for operation in (SCATTER, GATHER, SCATTER_ND, GATHER_ND)}


def check(
    operation: Operation, arrays: tuple[Any, ...], axis: Any, reduction: Any = None, out: Any = None
) -> Request:
    """The checked request of a call of ``operation`` on ``arrays`` (contract sections 4
    and 10, and section 7 for ``out``): the one check of every call the user makes.

    Raises the contract's ValueError or TypeError; never reads index values (but for the
    strings of object and StringDType arrays).
    """
    data = arrays[0]
    if (
        (out is None or out is data)
        and operation is SCATTER
        and type(data) is type(arrays[1]) is type(arrays[2]) is np.ndarray
    ):
        # The small call's way, spelled out: _request's, for three NumPy arrays. ``out=data``
        # too: ``check_out`` holds for data itself (a plain ndarray: its library, device,
        # shape and dtype), and ``settled`` checks its memory as it runs.
        indices, updates = arrays[1], arrays[2]
        key: Key = (
            "scatter_elements",  # SCATTER.name
            np.ndarray,
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
            _ON_CPU,
            (data.strides, indices.strides, updates.strides),
        )
        try:
            checked: Metadata | None = _checked(key)
        except TypeError:  # the check's own: raised below, with no context
            checked = None
        if checked is not None and checked.dtype_key not in STRING_KEYS:
            fields = (data, indices, updates, checked.axis, reduction, NUMPY, checked.dtype_key)
            return ScatterRequest._make((*fields, "cpu", checked, out))
    return _checked_request(operation, arrays, axis, reduction, out)


def normalise(
    data: Any, indices: Any, updates: Any, axis: Any, reduction: Any, out: Any = None
) -> ScatterRequest:
    """:func:`check` of a scatter."""
    return cast(ScatterRequest, check(SCATTER, (data, indices, updates), axis, reduction, out))


def normalise_gather(data: Any, indices: Any, axis: Any, out: Any = None) -> GatherRequest:
    """:func:`check` of a gather."""
    return cast(GatherRequest, check(GATHER, (data, indices), axis, None, out))


def derive(
    operation: Operation, like: Request, arrays: tuple[Any, ...], axis: Any, reduction: Any = None
) -> Request:
    """The request of a call that a host makes from the checked call ``like``, checking
    nothing again: a gradient's calls, a vmap batch. Their arrays' shapes follow from the
    checked ones of ``like`` (the rules of :mod:`scatterx._gradients`: the same indices, or
    arrays of their shape; a batch in front, ``axis`` shifted by it); their dtypes give the
    dtype key, and their library their device. ``key`` is None: decided afresh."""
    data = arrays[0]
    library = library_of(type(data))
    device = "cpu" if library is None else library.devices(*arrays)[0]
    dtype_key = operation.dtype_key(tuple(a.dtype for a in arrays), reduction)
    del like  # what it checked is what these arrays are: nothing of it is read again
    return operation.make(arrays, axis, reduction, type_name(type(data)), dtype_key, device, None)


def _checked_request(
    operation: Operation, arrays: tuple[Any, ...], axis: Any, reduction: Any, out: Any
) -> Request:
    """:func:`check` of any call."""
    kind = type(arrays[0])
    if kind is np.ndarray and _alike(kind, arrays):
        request = _request(operation, arrays, axis, reduction, _ON_CPU, NUMPY)
    else:
        library = library_of(kind)
        if library is not None and (
            _alike(kind, arrays) or all(library_of(type(a)) is library for a in arrays)
        ):
            devices = library.devices(*arrays)
            request = _request(operation, arrays, axis, reduction, devices, type_name(kind))
        else:
            request = _general(operation, arrays, axis, reduction)
    if request.dtype_key in STRING_KEYS:
        for role in operation.strings:
            check_string_values(getattr(request, role), role)
    if out is not None:
        shape = request.result_shape
        request = request._replace(out=check_out(out, request.data, shape, operation.result))
    return request


def _alike(kind: type, arrays: tuple[Any, ...]) -> bool:
    """Whether all of a call's arrays (data and indices, and any updates) are of ``kind``."""
    return type(arrays[1]) is kind and (len(arrays) == 2 or type(arrays[2]) is kind)


_ON_CPU = ("cpu", "cpu", "cpu")


def _request(
    operation: Operation,
    arrays: tuple[Any, ...],
    axis: Any,
    reduction: Any,
    devices: tuple[Any, ...],
    array_type: str,
) -> Request:
    """The request of arrays of one library, checked by their metadata (remembered)."""
    data = arrays[0]
    # The types too: axis=True must not pass as axis=1 remembered.
    call = (operation.name, type(data), type(axis), axis, type(reduction), reduction)
    metadata = (*(a.shape for a in arrays), *(a.dtype for a in arrays))
    key: Key = (*call, *metadata, devices[: len(arrays)], layout(*arrays))
    try:
        checked: Metadata | None = _checked(key)
    except TypeError:  # unhashable, or the check's own: raised below, with no context
        checked = None
    request_key: Hashable | None = checked
    if checked is None:
        checked, request_key = checked_key(key)
    dtype_key = checked.dtype_key
    return operation.make(
        arrays, checked.axis, reduction, array_type, dtype_key, devices[0], request_key
    )


def checked_key(key: Key) -> tuple[Metadata, Hashable | None]:
    """The checked metadata of a call's metadata ``key``, remembered where it hashes, and
    the request's key: that metadata, or None where ``key`` does not hash (an unhashable
    device: such calls are decided afresh each time)."""
    try:
        found: Metadata = _checked(key)
        return found, found
    except TypeError:  # unhashable (axis, reduction or device), or a check's own TypeError
        try:
            hash(key)
        except TypeError:
            pass
        else:
            raise  # the check's: raised once, with one traceback
    return _checked.__wrapped__(key), None


@lru_cache(maxsize=1024)
def _checked(key: Key) -> Metadata:
    """The checked metadata of a call's metadata ``key`` (see :func:`_request`): its
    operation, array type, axis, reduction, then each array's shape, each one's dtype,
    their devices and their layout."""
    name, _, _, axis, _, reduction, *metadata = key
    operation = OPERATIONS[name]
    n = len(operation.roles)
    shapes, dtypes, devices = tuple(metadata[:n]), tuple(metadata[n : 2 * n]), metadata[2 * n]
    if operation.reduces:
        reduction = check_reduction(reduction)
    check_same_device(*devices)
    checked_axis = operation.shapes(shapes, axis)
    return Metadata(checked_axis, operation.dtype_key(dtypes, reduction))


def prepared(arrays: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any, tuple[Any, ...]]:
    """Arrays of a call that are not all of one library's type, made arrays and checked to
    share one library and device: the arrays, their device and their shapes."""
    data, indices, *rest = arrays
    data = as_array(data, "data")
    # NumPy takes an empty list as float64; as NumPy's own indexing does, scatterx takes
    # empty index lists as integers, and empty update lists as data's dtype.
    roles = {"data": data, "indices": as_array(indices, "indices")}
    if empty_sequence(indices):
        roles["indices"] = roles["indices"].astype(np.int64)
    if rest:
        roles["updates"] = as_array(rest[0], "updates")
        if empty_sequence(rest[0]) and hasattr(data, "dtype"):
            roles["updates"] = np.asarray(rest[0], dtype=data.dtype)
    given = dict(zip(("data", "indices", "updates"), arrays, strict=False))
    device = check_same_library(roles, given)[0]
    shapes = tuple(known_shape(array, role) for role, array in roles.items())
    return tuple(roles.values()), device, shapes


def _general(operation: Operation, arrays: tuple[Any, ...], axis: Any, reduction: Any) -> Request:
    """The checks of a call whose arrays are not all of one library's type."""
    if operation.reduces:
        reduction = check_reduction(reduction)
    checked_axis = operation.scalar(axis)
    arrays, device, shapes = prepared(arrays)
    checked_axis = operation.shapes(shapes, checked_axis)
    dtypes = tuple(array.dtype for array in arrays)
    dtype_key = operation.dtype_key(dtypes, reduction)
    metadata = (*shapes, *dtypes, device, layout(*arrays))
    key = hashable_or_none((operation.name, type(arrays[0]), checked_axis, reduction, *metadata))
    array_type = type_name(type(arrays[0]))
    return operation.make(arrays, checked_axis, reduction, array_type, dtype_key, device, key)


def for_operators(
    operation: Operation, roles: dict[str, Any], axis: Any, reduction: Any = "none"
) -> Any:
    """``axis`` as torch's operators take it, once a call that goes to them (under
    ``torch.compile``, ``torch.export``, ``torch.func``) passes the eager call's checks
    that the operators' schema would make otherwise (a NumPy integer axis refused, True
    taken as 1, errors of its own) or not at all (a NumPy array beside tensors): the same
    errors as eagerly. ``roles``: the call's arrays, ``out`` None where not given; a
    SymInt axis passes as it is. ``axis``: the operation's integer argument (its
    ``batch_dims`` for a GatherND, None for a ScatterND)."""
    torch = sys.modules["torch"]
    arrays = {role: array for role, array in roles.items() if array is not None}
    if not all(isinstance(array, torch.Tensor) for array in arrays.values()):
        check_same_library(arrays)  # raises the eager call's TypeError
    check_reduction(reduction)
    return axis if isinstance(axis, torch.SymInt) else operation.scalar(axis)
