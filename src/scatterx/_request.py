"""The normalised, validated requests that the front-end hands to a backend.

The requests of the four operations (ScatterElements, GatherElements, ScatterND, GatherND)
share their members (:class:`_Members` defines them once); each names its fields and its
arrays' roles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

if TYPE_CHECKING:
    from typing_extensions import Self


class _Members:
    """The members every request has, defined once: a NamedTuple's class can have no
    other base, so each request is a subclass of its fields and of this (through
    :class:`_Scatters` or :class:`_Gathers`)."""

    __slots__ = ()
    #: The roles of the arrays, in the order of ``arrays``.
    roles: ClassVar[tuple[str, ...]]
    #: The name of the function called: ``"scatter_elements"``, ``"scatter_nd"``...
    operation: ClassVar[str]

    if TYPE_CHECKING:
        data: Any
        indices: Any
        axis: int

        _replace: Callable[..., Any]

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of ``data`` (and of a scatter's result)."""
        return tuple(self.data.shape)

    @property
    def index_shape(self) -> tuple[int, ...]:
        """Shape of ``indices`` (and of ``updates``, and of a gather's result)."""
        return tuple(self.indices.shape)

    @property
    def n_indices(self) -> int:
        """Number of elements of ``indices`` (of a scatter's updates)."""
        return math.prod(self.indices.shape)

    @property
    def axis_size(self) -> int:
        """Length of ``data`` along ``axis``: indices lie in ``[-axis_size, axis_size-1]``."""
        return int(self.data.shape[self.axis])

    def with_arrays(self, arrays: tuple[Any, ...], array_type: str, device: Any) -> Self:
        """Return this request on other arrays: the same values, carried or stand-ins.

        Parameters
        ----------
        arrays : tuple of array
            The new arrays, in the order of ``arrays`` (``out`` last, where the request
            has one).
        array_type : str
            Their type, ``"module:qualname"``.
        device : object
            Their device.

        Returns
        -------
        ScatterRequest or GatherRequest
            The request with those arrays; the axis, dtype key and key unchanged.
        """
        roles = self.roles
        out = arrays[len(roles)] if len(arrays) > len(roles) else None
        named = dict(zip(roles, arrays, strict=False))
        replaced: Self = self._replace(**named, array_type=array_type, device=device, out=out)
        return replaced


class _Scatters(_Members):
    """The members of both scatters' requests."""

    __slots__ = ()
    roles = ("data", "indices", "updates")

    if TYPE_CHECKING:
        updates: Any
        out: Any

    @property
    def result_shape(self) -> tuple[int, ...]:
        """The shape of the result (and of ``out``): that of ``data``."""
        return self.shape

    @property
    def arrays(self) -> tuple[Any, ...]:
        """The request's arrays: data, indices and updates, and ``out`` where given."""
        if self.out is None:
            return self.data, self.indices, self.updates
        return self.data, self.indices, self.updates, self.out


class _Gathers(_Members):
    """The members of both gathers' requests."""

    __slots__ = ()
    roles = ("data", "indices")

    if TYPE_CHECKING:
        out: Any

    @property
    def arrays(self) -> tuple[Any, ...]:
        """The request's arrays: data and indices, and ``out`` where given."""
        if self.out is None:
            return self.data, self.indices
        return self.data, self.indices, self.out


class _ScatterFields(NamedTuple):
    """The fields of :class:`ScatterRequest`."""

    data: Any
    indices: Any
    updates: Any
    axis: int
    reduction: str
    array_type: str
    dtype_key: str
    device: Any
    key: Hashable | None
    out: Any = None


class ScatterRequest(_ScatterFields, _Scatters):
    """One validated call of ``scatter_elements``: immutable, as every backend sees it.

    Backends receive this and nothing else; every metadata check of contract.md
    section 4 has passed. Index *values* are not yet checked: each backend checks
    bounds itself (before or inside its kernel) and raises
    :func:`scatterx.backend.out_of_bounds_error` for the first bad index in C order.

    Attributes
    ----------
    data, indices, updates
        The user's arrays, unmodified (array-likes already turned into arrays).
    axis
        The axis, non-negative.
    reduction
        One of ``"none"``, ``"add"``, ``"mul"``, ``"max"``, ``"min"``.
    array_type
        ``"module:qualname"`` of the array type, e.g. ``"numpy:ndarray"``.
    dtype_key
        The contract's dtype name (``"float32"``, ``"bfloat16"``, ``"StringDType"``...).
    device
        The device of ``data``.
    key
        The call's metadata (array type, dtypes, shapes, layouts, axis, reduction,
        device) as one hashable value, or None when some part cannot be hashed: what
        automatic choices are remembered by. Equal keys mean equal metadata.
    out
        None, or the array to write the result into (contract section 7): checked to have
        the library, device, shape and dtype of ``data``, writable and overlapping no other
        input. A backend gets ``out`` *as* ``data`` (the same object) for an update in
        place. A backend that writes the result into ``out`` returns ``out``; one that
        returns another array leaves the front-end to copy it into ``out``. Either way
        ``out`` must be left exactly as it was when the call raises.
    """

    __slots__ = ()
    operation = "scatter_elements"

    @property
    def settings(self) -> str:
        """The call's other arguments, as Python would spell them."""
        return f"axis={self.axis}, reduction={self.reduction!r}"

    @property
    def n_updates(self) -> int:
        """Number of updates (of elements of ``indices``)."""
        return math.prod(self.indices.shape)


class _GatherFields(NamedTuple):
    """The fields of :class:`GatherRequest`."""

    data: Any
    indices: Any
    axis: int
    array_type: str
    dtype_key: str
    device: Any
    key: Hashable | None
    out: Any = None


class GatherRequest(_GatherFields, _Gathers):
    """One validated call of ``gather_elements``: immutable, as every backend sees it.

    Every metadata check of contract.md section 10 has passed; index values are not yet
    checked, as for :class:`ScatterRequest`, and a backend raises
    :func:`scatterx.backend.out_of_bounds_error` for the first bad index in C order.

    Attributes
    ----------
    data, indices
        The user's arrays, unmodified (array-likes already turned into arrays).
    axis
        The axis, non-negative.
    array_type, dtype_key, device, key
        As for :class:`ScatterRequest`; ``key`` is never equal to a scatter's key.
    out
        None, or the array to write the result into: of the library, device and dtype of
        ``data`` and the shape of ``indices``, writable, overlapping neither input. As for
        :class:`ScatterRequest`, a backend returns ``out`` when it wrote into it.
    """

    __slots__ = ()
    operation = "gather_elements"

    @property
    def result_shape(self) -> tuple[int, ...]:
        """The shape of the result (and of ``out``)."""
        return self.index_shape

    @property
    def settings(self) -> str:
        """The call's other arguments, as Python would spell them."""
        return f"axis={self.axis}"


class _ScatterNDFields(NamedTuple):
    """The fields of :class:`ScatterNDRequest`."""

    data: Any
    indices: Any
    updates: Any
    reduction: str
    array_type: str
    dtype_key: str
    device: Any
    key: Hashable | None
    out: Any = None


class ScatterNDRequest(_ScatterNDFields, _Scatters):
    """One validated call of ``scatter_nd`` (ONNX ScatterND, opset 18).

    ``indices`` has ``depth = indices.shape[-1]`` columns, from 1 to the rank of ``data``:
    each row of them picks the slice ``data[row]`` of shape ``data.shape[depth:]``, and
    ``updates`` has the shape ``indices.shape[:-1] + data.shape[depth:]``. Slices that
    several rows pick are updated in the order of the rows (C order), for every reduction,
    ``none`` included (the last row wins). Index values are not yet checked: a backend
    raises :func:`scatterx.backend.out_of_bounds_error` for the first bad one in C order,
    with the dimension of ``data`` it indexes as the axis.

    Attributes
    ----------
    data, indices, updates, reduction, array_type, dtype_key, device, key, out
        As for :class:`ScatterRequest`.
    """

    __slots__ = ()
    operation = "scatter_nd"

    @property
    def settings(self) -> str:
        """The call's other arguments, as Python would spell them."""
        return f"reduction={self.reduction!r}"

    @property
    def depth(self) -> int:
        """How many leading dimensions of ``data`` a row of ``indices`` indexes."""
        return int(self.indices.shape[-1])


class _GatherNDFields(NamedTuple):
    """The fields of :class:`GatherNDRequest`."""

    data: Any
    indices: Any
    batch_dims: int
    array_type: str
    dtype_key: str
    device: Any
    key: Hashable | None
    out: Any = None


class GatherNDRequest(_GatherNDFields, _Gathers):
    """One validated call of ``gather_nd`` (ONNX GatherND, opset 13).

    The first ``batch_dims`` dimensions of ``data`` and ``indices`` are equal and paired;
    each row of the last dimension of ``indices`` (``depth`` columns, from 1 to
    ``data.ndim - batch_dims``) picks a slice of its batch's ``data``. The result has the
    shape ``indices.shape[:-1] + data.shape[batch_dims + depth:]``.

    Attributes
    ----------
    data, indices, array_type, dtype_key, device, key
        As for :class:`GatherRequest`.
    batch_dims
        The number of leading batch dimensions, non-negative.
    out
        None, or the array to write the result into: of the library, device and dtype of
        ``data`` and the shape ``result_shape``, as for :class:`GatherRequest`.
    """

    __slots__ = ()
    operation = "gather_nd"

    @property
    def settings(self) -> str:
        """The call's other arguments, as Python would spell them."""
        return f"batch_dims={self.batch_dims}"

    @property
    def depth(self) -> int:
        """How many dimensions of ``data`` (after the batch's) a row of ``indices`` indexes."""
        return int(self.indices.shape[-1])

    @property
    def result_shape(self) -> tuple[int, ...]:
        """The shape of the result (and of ``out``)."""
        start = self.batch_dims + self.depth
        return tuple(self.indices.shape[:-1]) + tuple(self.data.shape[start:])


#: A request of ScatterElements or GatherElements: what numba's element kernels plan.
ElementsRequest = ScatterRequest | GatherRequest
#: Any request: what selection and routes handle alike.
Request = ScatterRequest | GatherRequest | ScatterNDRequest | GatherNDRequest
