"""One gather on the numba backend: raw-bit views, the task count, the launch, the error."""

from __future__ import annotations

import itertools
import math
from typing import Any, NamedTuple

import numpy as np

from scatterx.backend import GatherRequest

from . import _plan, _runtime
from ._run import (
    _BITS,
    _destination,
    _input,
    _maps,
    _raise_first_bad,
    _readonly,
    check_before_writing,
)

Array = np.ndarray[Any, Any]

#: Fewest indices per task: below this a task's start-up costs more than its share of work.
MIN_TASK_INDICES = 16384
#: Tasks per thread: the work per index is even, and a second task per thread evens out a
#: thread that starts late.
TASKS_PER_THREAD = 2
#: Most bytes of data a unit's column band may span: it then stays in a core's L2 cache
#: while the unit walks its rows (random rows of a wider band would each miss).
SLAB_BYTES = 512 * 1024
#: Narrowest column band, in bytes of a row: two cache lines. Each row of a band is a
#: separate short read of indices and write of the output, which narrower bands pay for
#: more often than they save in misses on data.
LINE_BYTES = 128
#: The widest word the kernels move: wider elements (complex128) travel as several.
_WORD = 8


def words(dtype: np.dtype[Any]) -> tuple[np.dtype[Any], int]:
    """The unsigned dtype an element of ``dtype`` is moved as, and how many per element.

    A gather copies elements and computes nothing, so only the width matters: every dtype
    of one width shares the kernel's compiled signature, and the bits (NaN payloads, the
    bytes of a non-native byte order) arrive untouched.
    """
    if dtype.itemsize <= _WORD:
        return _BITS[dtype.itemsize], 1
    return _BITS[_WORD], dtype.itemsize // _WORD


class GatherParams(NamedTuple):
    """How a gather is cut into units (see :mod:`scatterx_numba._gather_kernel`)."""

    same: bool  # indices' inner shape is data's (no inner_map needed)
    band: int  # columns per unit
    n_bands: int  # units across the columns of one row
    n_chunks: int  # units down the rows of one outer position


def plan(
    data_shape: tuple[int, ...],
    index_shape: tuple[int, ...],
    axis: int,
    element_bytes: int,
    n_threads: int,
    *,
    constant_rows: bool,
) -> tuple[GatherParams, int]:
    """The units of a gather and the number of tasks that share them.

    Column bands keep what a unit reads of data in cache: a band of ``size`` rows of data
    spans at most ``SLAB_BYTES``, but is at least ``LINE_BYTES`` wide; unless index rows
    hold one value each (``constant_rows``: an embedding gradient), whose whole rows are
    contiguous copies. Rows are cut into chunks only when there are too few units to
    share out: a few tasks per thread, none with less than ``MIN_TASK_INDICES`` indices.
    """
    outer, rows, inner = _plan.split(index_shape, axis)
    same = data_shape[axis + 1 :] == index_shape[axis + 1 :]
    size = data_shape[axis]
    if constant_rows:
        band = inner
    else:
        band = max(SLAB_BYTES // max(1, size * element_bytes), LINE_BYTES // element_bytes, 1)
        band = min(band, inner)
    n_bands = -(-inner // band)
    wanted = max(1, min(TASKS_PER_THREAD * n_threads, outer * rows * inner // MIN_TASK_INDICES))
    n_chunks = min(rows, max(1, -(-wanted // (outer * n_bands))))
    return GatherParams(same, band, n_bands, n_chunks), min(wanted, outer * n_bands * n_chunks)


def _as_words(array: Array, word: np.dtype[Any], shape: tuple[int, int, int], width: int) -> Array:
    """``array`` (C-ordered) as ``(outer, rows, inner * width)`` words.

    Flattened first: a C-ordered array may have any stride on a dimension of length one,
    and a view as words of another width needs a contiguous last axis.
    """
    outer, rows, inner = shape
    return array.reshape(-1).view(word).reshape(outer, rows, inner * width)


def _three_d_view(array: Array, axis: int) -> Array | None:
    """A read-only view of ``array`` as ``(outer, size, inner)``, whatever its strides, or
    None where they do not allow one (dimensions of one side of the axis that do not merge).
    """
    merged: list[tuple[int, int]] = []
    for part in (slice(0, axis), slice(axis, axis + 1), slice(axis + 1, None)):
        sizes = zip(array.shape[part], array.strides[part], strict=True)
        dims = [(n, stride) for n, stride in sizes if n != 1]
        if any(s0 != s1 * n1 for (_, s0), (n1, s1) in itertools.pairwise(dims)):
            return None
        merged.append((math.prod(array.shape[part]), dims[-1][1] if dims else 0))
    shape, strides = zip(*merged, strict=True)
    return np.lib.stride_tricks.as_strided(array, shape, strides, writeable=False)


def _source(data: Array, axis: int, word: np.dtype[Any], width: int) -> Array:
    """``data`` as read-only ``(outer, size, inner * width)`` words, in its own byte order.

    Strided data of one word per element is read where it lies (a transposed gradient, say):
    copying all of data for a gather that reads part of it could cost far more than the
    gather. Elements of several words, and unaligned data, are copied in C order first.
    """
    shape = _plan.split(data.shape, axis)
    if data.flags.c_contiguous and data.flags.aligned:
        return _readonly(_as_words(data, word, shape, width))
    if width == 1 and data.flags.aligned:
        view = _three_d_view(data, axis)
        if view is not None:
            return view.view(word)
    return _readonly(_as_words(np.array(data, order="C", copy=True), word, shape, width))


def _constant_rows(idx: Array) -> bool:
    """Whether the first and last rows of ``idx`` ``(outer', rows, inner')`` each hold one
    value: an embedding gradient's indices, whose rows are best copied whole."""
    for row in (idx[0, 0], idx[-1, -1]):
        # The ends of a row first: they turn random rows away without a full compare.
        if row.size < 2 or row[0] != row[-1] or not bool((row == row[0]).all()):
            return False
    return True


def gather_elements(request: GatherRequest) -> Array:
    """Gather ``request`` into its ``out`` where the kernel can write it, else into a new
    C-ordered array of indices' shape and data's dtype.

    ``data`` and ``indices`` stay untouched, and the caller's ``out`` too when an index is
    out of bounds. bool results are canonical 0/1 bytes, whatever bytes data held, as the
    numpy backend gives.
    """
    data: Array = request.data
    shape, index_shape, axis = request.shape, request.index_shape, request.axis
    out = _destination(request.out, index_shape, data.dtype)
    if request.n_indices == 0:
        return out
    word, width = words(data.dtype)
    index_dtype = request.indices.dtype.newbyteorder("=")
    idx = _plan.split(index_shape, axis)
    indices = _input(request.indices, index_dtype, index_dtype)
    if out is request.out:
        check_before_writing(indices, request)
    arrays = (
        _as_words(out, word, idx, width),
        _source(data, axis, word, width),
        indices.reshape(idx),
        *_maps(shape, index_shape, axis),
    )
    params, n_tasks = plan(
        shape,
        index_shape,
        axis,
        data.dtype.itemsize,
        _runtime.num_threads(),
        constant_rows=_constant_rows(arrays[2]),
    )
    kernel = _runtime.gather_kernel(width)
    bad: Array = _runtime.launch(kernel, arrays, tuple(params), n_tasks)
    _raise_first_bad(bad, request)
    if data.dtype.kind == "b":
        # Copied raw, then made canonical: a pass over the result, not over all of data.
        np.not_equal(out.view(np.uint8), 0, out=out)
    return out
