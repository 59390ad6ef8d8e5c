"""Which compiled code a call will launch, told from its metadata alone (no numba import).

A call launches kernels (``_runtime.kernel``, ``_runtime.gather_kernel``, and the passes
of ``_runtime.pass_kernel``: the indices' range where it writes into the caller's
``out``, data's copy into a large new output) with arguments whose *kinds*
(``_runtime.kinds``: dtype, rank, layout and write flags) pick the compiled signature.
:func:`describe` reads what those depend on from a request (shapes, dtypes, axis,
reduction, the layouts of data and ``out``; never a value), and :func:`needs` turns it
into the launches, each with tiny stand-ins of the arguments, of exactly the kinds of the
arguments that ``_run`` and ``_gather`` will make: a compile for the stand-ins is the
compile the call needs, and their kinds are what ``_runtime.launch`` remembers as loaded.
This follows ``_run`` and ``_gather`` step by step; a test checks each foretold launch
against the launches calls make.

The stand-ins are C-ordered arrays of each argument's shape with every length above 2
cut to 2: a C-ordered array's flags depend only on which lengths are 0, 1 or more.
"""

from __future__ import annotations

import math
from functools import lru_cache, partial
from typing import Any, NamedTuple

import numpy as np

from scatterx.backend import GatherRequest, Request

from . import _gather, _layout, _plan, _run, _runtime

Array = np.ndarray[Any, Any]
_INT64 = np.dtype(np.int64)
_BYTES = np.dtype(np.uint8)


class Call(NamedTuple):
    """What the launches of a call depend on: hashable, and holding none of its arrays.

    The shapes and axis are those the kernels see: a scatter of data that is C-contiguous
    in another order of dimensions runs on views in that order (``_layout``).
    """

    what: str  # "float32 add", "float32 gather": for people
    dtype: np.dtype[Any]  # data's dtype in native byte order
    index_dtype: np.dtype[Any]  # likewise, for indices
    reduction: str | None  # None: a gather
    family: str  # how ``_run`` stores the dtype ("plain", "bool", "half", "bf16")
    shape: tuple[int, ...]
    index_shape: tuple[int, ...]
    axis: int
    into_out: bool  # the kernels write into the caller's ``out``: bounds come first
    copies: bool  # scatter: data is copied into the output (not in place)
    data_ready: bool  # scatter: the kernels read data as it lies (C order, aligned, native)
    source_flags: tuple[bool, bool] | None  # gather reading data where it lies: C, F


class Need(NamedTuple):
    """One launch: the ``_runtime`` function that makes the kernel, its parameters,
    stand-ins of the arguments, and ``key``: the kernel and the kinds of its arguments
    (equal keys, one compiled signature)."""

    maker: str
    params: tuple[Any, ...]
    args: tuple[Any, ...]
    key: tuple[Any, ...]

    @classmethod
    def of(cls, maker: str, params: tuple[Any, ...], args: tuple[Any, ...]) -> Need:
        """The launch of ``getattr(_runtime, maker)(*params)`` on arguments like ``args``."""
        return cls(maker, params, args, (maker, params, _runtime.kinds(args)))

    def kernel(self) -> Any:
        """The kernel (the first one made in a process imports numba)."""
        return getattr(_runtime, self.maker)(*self.params)


def describe(request: Request) -> Call:
    """The metadata of ``request`` that its launches depend on."""
    if isinstance(request, GatherRequest):
        return _describe_gather(request)
    order = _layout.contiguous_order(request.data)
    if order is not None:
        request = _layout.reordered(request, order)
    data = request.data
    dtype = _run._native(data.dtype)
    family = _run._FAMILY.get(request.dtype_key, "plain")
    into_out = _into_out(request, dtype)
    # bool data is copied as canonical 0/1 bytes first: never in place, always ready.
    canonical = family == "bool"
    in_place = into_out and request.out is data and not canonical
    return Call(
        f"{request.dtype_key} {request.reduction}",
        dtype,
        _run._native(request.indices.dtype),
        request.reduction,
        family,
        request.shape,
        request.index_shape,
        request.axis,
        into_out,
        copies=not in_place,
        data_ready=canonical or _run._kernel_ready(data, dtype),
        source_flags=None,
    )


def _describe_gather(request: GatherRequest) -> Call:
    data = request.data
    return Call(
        f"{request.dtype_key} gather",
        _run._native(data.dtype),
        _run._native(request.indices.dtype),
        None,
        "plain",
        request.shape,
        request.index_shape,
        request.axis,
        # A gather writes out in data's dtype, byte order kept (see _gather).
        _into_out(request, data.dtype),
        copies=False,
        data_ready=False,
        source_flags=_source_flags(data, request.axis),
    )


def _into_out(request: Request, dtype: np.dtype[Any]) -> bool:
    """Whether the kernels write into the caller's ``out`` (``_run._destination``)."""
    return _run.writes_into(request.out, dtype)


def _source_flags(data: Array, axis: int) -> tuple[bool, bool] | None:
    """The C and F flags of the view a gather reads ``data`` through where it lies; None
    where it reads C-ordered words (``_gather._source``)."""
    if data.flags.c_contiguous and data.flags.aligned:
        return None
    if data.dtype.itemsize > 8 or not data.flags.aligned:
        return None  # copied into C order first
    view = _gather._three_d_view(data, axis)
    if view is None:
        return None
    return bool(view.flags.c_contiguous), bool(view.flags.f_contiguous)


@lru_cache(maxsize=256)
def needs(call: Call, threads: int) -> tuple[Need, ...]:
    """The launches of ``call`` when it runs on ``threads`` of numba's threads.

    A scatter whose shapes leave the whole-row strategy open needs its kernel and the
    columns kernel (and what the columns kernel needs before it): only the index values
    tell which runs, and a row that turns out not to be constant runs as columns after all.
    """
    if call.reduction is None:
        return (*((_bounds_need(call),) if call.into_out else ()), _gather_need(call))
    found = {need.key: need for need in _scatter_needs(call, threads)}
    return tuple(found.values())


def _bounds_need(call: Call) -> Need:
    """The pass over the indices before a call writes into the caller's ``out``
    (``_run.check_before_writing``)."""
    flat = _stand_in(call.index_dtype, (math.prod(call.index_shape),))
    return Need.of("pass_kernel", ("index_range",), (flat, 1))


def _stand_in(dtype: np.dtype[Any], shape: tuple[int, ...], *, writeable: bool = False) -> Array:
    """A C-ordered array with the kinds of one of ``shape``: its lengths cut to 2."""
    array = np.empty(tuple(min(int(n), 2) for n in shape), dtype)
    array.flags.writeable = writeable
    return array


def _strided_stand_in(dtype: np.dtype[Any], c: bool, f: bool) -> Array:
    """A read-only 3-D array with the C and F flags ``c`` and ``f``."""
    if c:
        return _stand_in(dtype, (1, 1, 1) if f else (2, 2, 2))
    array = np.empty((2, 2, 2), dtype, order="F") if f else np.empty((2, 2, 4), dtype)[..., ::2]
    array.flags.writeable = False
    return array


def _scatter_needs(call: Call, threads: int) -> list[Need]:
    """The launches of a scatter (see ``_run._scatter_c``)."""
    assert call.reduction is not None
    if not math.prod(call.index_shape):
        return []
    storage = _run._storage(call.family, call.dtype, call.reduction)
    regroupable = _run._regroupable(call.family, call.reduction, call.dtype)
    shape, index_shape, axis = call.shape, call.index_shape, call.axis
    choose = partial(_plan.plan, shape, index_shape, axis, storage.itemsize, threads)
    plans = dict.fromkeys(
        choose(regroupable=regroupable, constant_rows=constant) for constant in (True, False)
    )
    three_d, index_three_d = _plan.split(shape, axis), _plan.split(index_shape, axis)
    arrays = (
        _stand_in(storage, three_d, writeable=True),  # out
        _stand_in(storage, three_d),  # data, or out itself read-only
        _stand_in(call.index_dtype, index_three_d),
        _stand_in(storage, index_three_d),  # updates
        _stand_in(_INT64, index_three_d[:1]),  # outer_map
        _stand_in(_INT64, index_three_d[2:]),  # inner_map
    )
    params = (1, True, True)  # KernelParams: band, inner_same, copy
    found = []
    for plan in plans:
        fused = call.copies and _run._fused_copy(plan, call, call.data_ready)  # type: ignore[arg-type]
        if call.into_out and not _run._writes_after_bounds(plan, fused, not call.copies):
            found.append(_bounds_need(call))
        if _copies_first(call, plan, threads):
            found.append(_copy_need(threads))
        kernel = (plan.strategy, call.family, call.reduction)
        found.append(
            Need.of("kernel", kernel, (arrays, _scratch(plan, call, storage), params, plan.n_tasks))
        )
    return found


def _copies_first(call: Call, plan: _plan.Plan, threads: int) -> bool:
    """Whether data is copied into a new output by the parallel pass before the kernel
    (``_run._kernel_arrays`` and ``_run._copy_before``)."""
    if not call.copies or _run._fused_copy(plan, call, call.data_ready):  # type: ignore[arg-type]
        return False
    n_bytes = math.prod(call.shape) * call.dtype.itemsize
    return threads > 1 and n_bytes >= _run.PARALLEL_COPY_BYTES and call.data_ready


def _copy_need(threads: int) -> Need:
    """The parallel copy of data into the output, as bytes (``_run._copy_before``)."""
    destination = _stand_in(_BYTES, (2,), writeable=True)
    return Need.of(
        "pass_kernel", ("copy_words",), (destination, _stand_in(_BYTES, (2,)), 4 * threads)
    )


def _scratch(plan: _plan.Plan, call: Call, storage: np.dtype[Any]) -> Array:
    """A stand-in of the strategy's scratch array (``_run._SCRATCH``): 2-D, writeable."""
    outer, size, inner = _plan.split(call.shape, call.axis)
    index_outer, rows, _ = _plan.split(call.index_shape, call.axis)
    n, total = plan.n_tasks, outer * size * inner
    wide = math.prod(call.index_shape) > np.iinfo(np.int32).max
    last_positions = np.dtype(np.int64 if wide else np.int32)
    scratch = {
        _plan.Strategy.COLUMNS: (storage, (1, 1)),  # a placeholder
        _plan.Strategy.OWNERS: (storage, (n, outer * -(-size // n) * inner + 1)),
        _plan.Strategy.ROWS: (_INT64, (1, index_outer * rows)),
        _plan.Strategy.SEGMENTS: (
            last_positions if call.reduction == "none" else storage,
            (n, total),
        ),
        # Positions, the column and the values: 3 elements at least.
        _plan.Strategy.BINNED: (storage, (1, 3)),
    }
    dtype, shape = scratch[plan.strategy]
    return _stand_in(dtype, shape, writeable=True)


def _gather_need(call: Call) -> Need:
    """The kernel launch of a gather (see ``_gather.gather_elements``)."""
    word, width = _gather.words(call.dtype)
    outer, rows, inner = _plan.split(call.index_shape, call.axis)
    data_outer, size, data_inner = _plan.split(call.shape, call.axis)
    if call.source_flags is None:
        source = _stand_in(word, (data_outer, size, data_inner * width))
    else:
        source = _strided_stand_in(word, *call.source_flags)
    arrays = (
        _stand_in(word, (outer, rows, inner * width), writeable=True),
        source,
        _stand_in(call.index_dtype, (outer, rows, inner)),
        _stand_in(_INT64, (outer,)),
        _stand_in(_INT64, (inner,)),
    )
    params = (True, 1, 1, 1)  # GatherParams: same, band, n_bands, n_chunks
    return Need.of("gather_kernel", (width,), (arrays, params, 1))
