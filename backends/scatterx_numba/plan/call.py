"""What a call's launches depend on, read from its request: metadata, never values.

:func:`describe` reads the shapes, dtypes, axis, reduction and the layouts of data and
``out`` into a hashable :class:`Call`; :func:`storage` says how the kernels keep its
elements; a launch (:class:`Launch`) names its arrays as
:class:`Arg`: what their kinds (``_runtime.kinds``) depend on. :func:`bounds_launch` is
the pass over the indices that a scatter's plan (``plan.launch``) and a gather's
(``plan.gather_launch``) start with where they write into the caller's ``out``. No numba
import.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from scatterx.backend import ElementsRequest, GatherRequest, ScatterRequest

from .._views import kernel_ready
from . import layout as _layout
from . import strategy as _strategy

Array = np.ndarray[Any, Any]
#: Indices per task of the pass over the indices' range (``kernels.passes.index_range``).
BOUNDS_TASK_INDICES = 1 << 16

#: How each dtype is stored in the kernels: bool as uint8 0/1, float16 and bfloat16 as
#: their uint16 bits (their reductions decode to float32 and round back).
_FAMILY = {"bool": "bool", "float16": "half", "bfloat16": "bf16"}
_STORAGE: dict[str, np.dtype[Any]] = {
    "bool": np.dtype(np.uint8),
    "half": np.dtype(np.uint16),
    "bf16": np.dtype(np.uint16),
}


def native(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """``dtype`` in native byte order."""
    return dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype


def writes_into(out: Array | None, dtype: np.dtype[Any]) -> bool:
    """Whether the kernels write into the caller's ``out`` as it is: C order, ``dtype``,
    aligned, writable."""
    return out is not None and kernel_ready(out, dtype) and bool(out.flags.writeable)


class Call(NamedTuple):
    """What the launches of a call depend on: hashable, and holding none of its arrays.

    The shapes and axis are those the kernels see: a scatter of data that is C-contiguous
    in another order of dimensions runs on views in that order (``plan.layout``).
    """

    what: str  # "float32 add", "float32 gather": for people
    dtype: np.dtype[Any]  # data's dtype in native byte order
    index_dtype: np.dtype[Any]  # likewise, for indices
    reduction: str | None  # None: a gather
    family: str  # how the kernels store the dtype ("plain", "bool", "half", "bf16")
    shape: tuple[int, ...]
    index_shape: tuple[int, ...]
    axis: int
    into_out: bool  # the kernels write into the caller's ``out``: bounds come first
    in_place: bool  # scatter: ``out`` is data itself, so nothing is copied
    data_ready: bool  # scatter: the kernels read data as it lies (C order, aligned, native)
    source_flags: tuple[bool, bool] | None  # gather reading data where it lies: C, F
    index_flags: tuple[bool, bool] | None = None  # gather reading indices where they lie


def describe(request: ElementsRequest) -> Call:
    """The metadata of ``request`` that its launches depend on."""
    if isinstance(request, GatherRequest):
        return _describe_gather(request)
    order = _layout.contiguous_order(request.data)
    return describe_c(request if order is None else _layout.reordered(request, order))


def describe_c(request: ScatterRequest) -> Call:
    """:func:`describe` for a scatter as the kernels see it (``plan.layout``'s views taken)."""
    data = request.data
    dtype = native(data.dtype)
    family = _FAMILY.get(request.dtype_key, "plain")
    into_out = writes_into(request.out, dtype)
    # bool data is copied as canonical 0/1 bytes first: never in place, always ready.
    canonical = family == "bool"
    return Call(
        f"{request.dtype_key} {request.reduction}",
        dtype,
        native(request.indices.dtype),
        request.reduction,
        family,
        request.shape,
        request.index_shape,
        request.axis,
        into_out,
        in_place=into_out and request.out is data and not canonical,
        data_ready=canonical or kernel_ready(data, dtype),
        source_flags=None,
    )


def _describe_gather(request: GatherRequest) -> Call:
    data = request.data
    view = _layout.strided_source(data, request.axis, _strategy.words(data.dtype)[1])
    index_view = None if view is None else _layout.strided_indices(request.indices, request.axis)
    return Call(
        f"{request.dtype_key} gather",
        native(data.dtype),
        native(request.indices.dtype),
        None,
        "plain",
        request.shape,
        request.index_shape,
        request.axis,
        # A gather writes out in data's dtype, byte order kept (see _gather).
        writes_into(request.out, data.dtype),
        in_place=False,
        data_ready=False,
        source_flags=None if view is None else (view.flags.c_contiguous, view.flags.f_contiguous),
        index_flags=None if index_view is None else _layout.flags(index_view),
    )


class Arg(NamedTuple):
    """An array argument of a launch, as far as its kinds go: C-ordered, or strided with
    the C and F flags ``flags``."""

    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    writeable: bool = False
    flags: tuple[bool, bool] | None = None

    def of(self, array: Array) -> Array:
        """The C-ordered ``array`` as this argument: its words viewed as ``dtype`` in
        ``shape``, read-only unless written (every input then has one numba type).

        Flattened first where the words change width: a C-ordered array may have any
        stride on a dimension of length one, and a view as words of another width needs a
        contiguous last axis. Of the same dtype, one reshape (of C-ordered memory: a new
        view, whatever its strides) is enough.
        """
        if array.dtype == self.dtype:
            view = array.reshape(self.shape)
        else:
            view = array.reshape(-1).view(self.dtype).reshape(self.shape)
        if not self.writeable:
            view.flags.writeable = False
        return view


class Launch(NamedTuple):
    """One launch: the ``_runtime`` function that makes the kernel, its parameters, and
    the arguments (``Arg`` for arrays, tuples of them, and scalars as launched)."""

    maker: str
    params: tuple[Any, ...]
    args: tuple[Any, ...]


def bounds_tasks(n_indices: int, threads: int) -> int:
    """Tasks of the pass over the indices' range."""
    return max(1, min(4 * threads, n_indices // BOUNDS_TASK_INDICES))


def bounds_launch(call: Call, threads: int) -> Launch:
    """The pass over the indices (``kernels.passes.index_range``) before a scatter or a gather
    writes into the caller's ``out``."""
    n = math.prod(call.index_shape)
    return Launch(
        "pass_kernel", ("index_range",), (Arg(call.index_dtype, (n,)), bounds_tasks(n, threads))
    )


def storage(family: str, dtype: np.dtype[Any], reduction: str) -> np.dtype[Any]:
    """The dtype the kernels see: see ``_STORAGE``; ``none`` moves bits (``_strategy.BITS``),
    so one compiled signature serves int32, uint32 and float32 alike.

    Wrapping add and mul give the same bits on signed and unsigned integers of one width
    (two's complement), so signed ones run as unsigned: one compiled signature for both.
    """
    if reduction == "none" or (reduction in ("add", "mul") and dtype.kind == "i"):
        return _strategy.BITS.get(dtype.itemsize, dtype)  # complex128 has no 16-byte integer
    return _STORAGE.get(family, dtype)


def regroupable(family: str, reduction: str, dtype: np.dtype[Any]) -> bool:
    """Whether the reduction's fold may be split into segments and merged (see kernels.segments)."""
    if reduction in ("none", "max", "min") or family == "bool":
        return True
    return family == "plain" and dtype.kind in "iu"


def identity(family: str, reduction: str, dtype: np.dtype[Any]) -> Any:
    """The value that ``op(x, identity)`` leaves bit for bit as ``x``, in storage form."""
    if family in ("half", "bf16"):
        bits = {"half": (0xFC00, 0x7C00), "bf16": (0xFF80, 0x7F80)}[family]  # -inf, +inf
        return bits[reduction == "min"]
    if family == "bool":
        return int(reduction in ("mul", "min"))
    if reduction in ("add", "mul"):
        return int(reduction == "mul")
    if dtype.kind == "f":
        return -np.inf if reduction == "max" else np.inf
    info = np.iinfo(dtype)
    return info.min if reduction == "max" else info.max
