"""How the kernels see a call: their arrays and scalars, and the read-only views that make them.

What the plans (:mod:`scatterx_numba.plan`) hand the kernels (:mod:`scatterx_numba.kernels`)
and the entry points (``_run``, ``_gather``) fill in: which kernel (:class:`Strategy`), the
arrays (:class:`KernelArrays`), the scalars (:class:`KernelParams`, :class:`GatherParams`)
and what a whole-row task answers for a row that is not constant (:data:`NOT_CONSTANT`).
Plain Python and NumPy: no numba import.
"""

from __future__ import annotations

import math
from enum import IntEnum
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from scatterx.backend import empty_aligned

Array = np.ndarray[Any, Any]

#: A whole-row task's result when some index row is not constant: run as columns instead.
NOT_CONSTANT = -2


class Strategy(IntEnum):
    """How a call is split into parallel tasks; each compiles to a kernel of its own."""

    COLUMNS = 0
    OWNERS = 1
    ROWS = 2
    SEGMENTS = 3
    BINNED = 4


class KernelArrays(NamedTuple):
    """The arrays of a call, as the kernels see them (shapes: see
    :mod:`scatterx_numba.kernels.tasks`)."""

    out: Array  # (outer, size, inner), written
    data: Array  # read-only, shaped as out: data, or out itself when it holds the copy
    idx: Array  # (outer', rows, inner'), read-only
    upd: Array  # as idx, in storage form
    outer_map: Array  # flat outer position of out for each of idx
    inner_map: Array  # flat inner position of out for each of idx


class KernelParams(NamedTuple):
    """The scalars of a scatter kernel's launch."""

    band: int  # columns: inner positions per task
    inner_same: bool  # columns: indices' inner shape is data's (no inner_map needed)
    copy: bool  # the tasks copy data into out themselves (fused copy)
    checked: bool  # a pass found every index in bounds before the kernel: columns skip it
    check_first: bool  # columns: the kernel checks every index before its first write


class GatherParams(NamedTuple):
    """How a gather is cut into units (see :mod:`scatterx_numba.kernels.gather`)."""

    same: bool  # indices' inner shape is data's (no inner_map needed)
    band: int  # columns per unit
    n_bands: int  # units across the columns of one row
    n_chunks: int  # units down the rows of one outer position


def readonly(array: Array) -> Array:
    """A read-only view: every input then has one numba type, so one compiled signature."""
    view = array.view()
    view.flags.writeable = False
    return view


def kernel_ready(array: Array, dtype: np.dtype[Any]) -> bool:
    """Whether ``array`` can be handed over as is: C order, native, aligned."""
    flags = array.flags
    return bool(flags.c_contiguous and flags.aligned and array.dtype == dtype)


def kernel_input(array: Array, dtype: np.dtype[Any], storage: np.dtype[Any]) -> Array:
    """``array`` as C-ordered native ``dtype`` viewed as ``storage``; copies only if needed."""
    if not kernel_ready(array, dtype):
        array = np.array(array, dtype=dtype, order="C", copy=True)
    return readonly(array.view(storage))


def destination(into_out: bool, out: Array | None, shape: tuple[int, ...], dtype: Any) -> Array:
    """Where the kernels write: the caller's ``out`` where the call writes into it
    (``into_out``: ``plan.call.writes_into``), else a new aligned array of ``shape`` and
    ``dtype`` (JAX takes it without a copy)."""
    if into_out and out is not None:
        return out
    return empty_aligned(shape, dtype)


#: Positions of the largest maps that :func:`maps` keeps (two int64 arrays of at most
#: this many each, 256 kinds of call: 128 MiB at most).
_KEPT_MAP = 1 << 15


def maps(
    data_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int
) -> tuple[Array, Array]:
    """Flat outer and inner positions of data for each flat outer/inner position of indices.

    Read-only, so shared by the calls of one kind: a call made again and again (in place,
    say) spares their making, whose cost grows tenfold once the kernel has evicted the
    interpreter's state from the caches (docs/backends/numba.md). Only small maps are
    kept: a large one costs little beside its call's own work, and would hold its memory.
    """
    parts = (index_shape[:axis], index_shape[axis + 1 :])
    if max(math.prod(part) for part in parts) <= _KEPT_MAP:
        return _kept_maps(data_shape, index_shape, axis)
    return _made_maps(data_shape, index_shape, axis)


def _made_maps(
    data_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int
) -> tuple[Array, Array]:
    found = []
    for part in (slice(0, axis), slice(axis + 1, None)):
        index_part, data_part = index_shape[part], data_shape[part]
        count = math.prod(index_part)
        flat = np.arange(count, dtype=np.int64)
        if index_part != data_part and count:
            flat = np.ravel_multi_index(np.unravel_index(flat, index_part), data_part)
            flat = flat.astype(np.int64)
        found.append(readonly(flat))
    return found[0], found[1]


# No lock: read-only maps that depend on the shapes alone; two threads that both miss make
# equal ones, and either is kept.
_kept_maps = lru_cache(maxsize=256)(_made_maps)
