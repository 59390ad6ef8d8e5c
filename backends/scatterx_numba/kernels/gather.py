"""The parallel gather kernel: raw bits copied from data to a new output, disk-cached.

Shapes seen here (:mod:`scatterx_numba._gather` reshapes every call to them): ``data`` is
``(outer, size, inner * width)`` and ``out`` is ``(outer', rows, inner' * width)``, each
element as ``width`` unsigned words; ``out`` is C-ordered, ``data`` too or, with one word
per element, strided as the caller's array. ``idx`` is ``(outer', rows, inner')``, or
``(outer', rows, 1)`` with one index for each whole row of ``out`` (GatherND's rows, see
:mod:`scatterx_numba._nd`: the units then span whole rows).
``outer_map`` and ``inner_map`` give, for each outer/inner position of ``idx``, that of
``data`` (the off-axis dimensions of indices may be shorter than those of data).

The work is cut into units: a band of columns of a chunk of rows of one outer position
(:class:`scatterx_numba._views.GatherParams` says how many of each). A unit walks its
part of ``idx`` in C order and stops at its first bad index, which is then the first of
its part; a task runs a contiguous range of units and keeps the first of their first bad
indices, so the first of all tasks is the first in C order.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numba as nb
import numpy as np

from .._views import GatherParams
from .claims import claim, counters, fetch_add, wait_until
from .tasks import all_in_bounds, first_bad_index, inner_function, share, wrap

# Inlined where it is called, before typing. The two loops of a unit are not: inlined
# into one function, the whole-row loop slowed the one-column loop (last axis) 1.4x.
_inlined = nb.njit(inline="always")
#: Indices per share of the check of every index before writing into the caller's out.
CHECK_INDICES = 1 << 16
#: Outer positions of one-column indices in Fortran order walked together (see _column).
COLUMN_BLOCK = 64


@_inlined
def _constant(ix: Any, q0: int, q1: int) -> bool:
    """Whether ``ix[q0:q1]`` holds one value (each row one id): xor-or vectorises, on
    unsigned positions (see :func:`_elements`)."""
    first = ix[q0]
    if ix[q1 - 1] != first:  # rejects random rows at once
        return False
    diff = first ^ first
    for q in range(np.uint64(q0 + 1), np.uint64(q1)):
        diff |= ix[q] ^ first
    return bool(diff == 0)


@inner_function
def _elements(dst: Any, src: Any, ix: Any, inner_map: Any, same: bool, rq: Any, w: int) -> int:
    """``dst[r, q] = src[ix[r, q], q]`` for the rows and columns ``rq = (r0, r1, q0, q1)``.

    ``dst`` and ``ix`` are one outer position of ``out`` and ``idx``, ``src`` that of
    ``data``; each element is ``w`` words; ``same``: indices' inner shape is data's, so
    ``inner_map`` is the identity. Returns -1, or the flat position ``r * inner' + q`` of
    the first bad index. Positions run unsigned once checked: with signed ones numba wraps
    negative positions around, a branch in the hot loop that also stops vectorising.
    """
    r0, r1, q0, q1 = rq
    size, n_inner, words = src.shape[0], ix.shape[1], np.uint64(w)
    for r in range(np.uint64(r0), np.uint64(r1)):
        for q in range(np.uint64(q0), np.uint64(q1)):
            v = wrap(ix[r, q], size)
            if v < 0 or v >= size:
                return int(int(r) * n_inner + int(q))
            # uint64 throughout: numba computes uint64 with int64 in float64.
            column = (q if same else np.uint64(inner_map[q])) * words
            for k in range(words):
                dst[r, q * words + k] = src[np.uint64(v), column + k]
    return -1


@inner_function
def _whole_rows(dst: Any, src: Any, ix: Any, inner_map: Any, rows: Any, rq: Any, w: int) -> int:
    """As :func:`_elements` for indices as wide as data, with a contiguous copy for each
    row segment of one index value (an embedding gradient: each row one id); ``ix`` one
    index wide holds that value (then ``q0`` is 0: the units span whole rows).
    ``rows``: empty, or whether each row of ``ix`` holds one value, as the check before
    writing found (see :func:`_check_rows`): the rows are then not read again."""
    r0, r1, q0, q1 = rq
    size, n_inner, known = src.shape[0], ix.shape[1], rows.size > 0
    for r in range(np.uint64(r0), np.uint64(r1)):
        if n_inner > 1 and not (rows[r] != 0 if known else _constant(ix[r], q0, q1)):
            bad = _elements(dst, src, ix, inner_map, True, (r, r + np.uint64(1), q0, q1), w)
            if bad >= 0:
                return bad
            continue
        v = wrap(ix[r, q0], size)
        if v < 0 or v >= size:
            return int(int(r) * n_inner + q0)
        line, row = src[np.uint64(v)], dst[r]
        for k in range(np.uint64(q0 * w), np.uint64(q1 * w)):
            row[k] = line[k]
    return -1


@inner_function
def _row_bad(row: Any, size: int) -> int:
    """-1, or the position in the 1-D ``row`` of its first index out of bounds; min and
    max first, as ``tasks.first_bad_index``."""
    low = high = row[0]
    for q in range(np.uint64(row.size)):
        low, high = min(low, row[q]), max(high, row[q])
    if low >= -size and high < size:
        return -1
    for q in range(row.size):
        v = wrap(row[q], size)
        if v < 0 or v >= size:
            return q
    return -1


@inner_function
def _check_rows(idx: Any, size: int, rows: Any, c: int, n_checks: int) -> int:
    """Check share ``c`` of the rows of ``idx`` (of every outer position, in C order),
    noting in ``rows`` whether each holds one value: what a whole-row gather
    (:func:`_whole_rows`) reads of them then, so that into the caller's out it reads the
    indices once, as into a new result. -1, or the flat C position of the first bad index.
    """
    n_rows, n_inner = idx.shape[1], idx.shape[2]
    lo, hi = share(idx.shape[0] * n_rows, c, n_checks)
    for k in range(lo, hi):
        o, r = k // n_rows, k % n_rows
        row = idx[o, r]
        constant = _constant(row, 0, n_inner)
        bad = _row_bad(row[:1] if constant else row, size)
        if bad >= 0:
            return int(k * n_inner + bad)
        rows[o, r] = constant
    return -1


@inner_function
def _first_bad_of(idx: Any, size: int, o0: int, o1: int) -> int:
    """-1, or the flat C position of the first bad index of outer positions ``o0:o1`` of
    one-column ``idx``: walked in C order, where a block of them met one out of order."""
    rows = idx.shape[1]
    for o in range(o0, o1):
        for r in range(rows):
            v = wrap(idx[o, r, 0], size)
            if v < 0 or v >= size:
                return int(o * rows + r)
    return -1


@_inlined
def _column(arrays: Any, o0: int, o1: int, w: int) -> int:
    """Outer positions ``o0:o1`` whole, indices one column wide (a gather along the last
    axis: last-axis-sparse, a transposed square's rows): plain loops over the rows of
    ``idx``. Through the generic units, each outer position's call, views and loops cost
    more than its few indices; and out of line, its width is not a constant, and the
    loop ran 1.4x the hand-written one.

    Where the outer positions lie closer in memory than the rows (Fortran order), a
    block of ``COLUMN_BLOCK`` of them walks the rows together: one at a time, each row
    read would touch a page of its own (3x slower on a transposed square). A bad index
    there ends the block, which is walked again in C order for the first one. Returns
    -1, or the flat C position of the first bad index.
    """
    out, data, idx, outer_map = arrays[0], arrays[1], arrays[2], arrays[3]
    rows, size, words = idx.shape[1], data.shape[1], np.uint64(w)
    zero = np.uint64(0)
    if idx.strides[0] < idx.strides[1]:
        for b0 in range(o0, o1, COLUMN_BLOCK):
            b1 = min(b0 + COLUMN_BLOCK, o1)
            for r in range(zero, np.uint64(rows)):
                for o in range(np.uint64(b0), np.uint64(b1)):
                    v = wrap(idx[o, r, zero], size)
                    if v < 0 or v >= size:
                        return _first_bad_of(idx, size, b0, b1)
                    oo = np.uint64(outer_map[o])
                    for k in range(words):
                        out[o, r, k] = data[oo, np.uint64(v), k]
        return -1
    for o in range(np.uint64(o0), np.uint64(o1)):
        oo = np.uint64(outer_map[o])
        for r in range(zero, np.uint64(rows)):
            v = wrap(idx[o, r, zero], size)
            if v < 0 or v >= size:
                return int(int(o) * rows + int(r))
            for k in range(words):
                out[o, r, k] = data[oo, np.uint64(v), k]
    return -1


@_inlined
def _unit(arrays: Any, params: GatherParams, known: Any, unit: int, w: int) -> int:
    """Run unit ``unit``: a band of columns of a chunk of rows of one outer position.

    Returns -1, or the flat C-order position in ``idx`` of the first bad index of the unit.
    """
    out, data, idx, outer_map, inner_map = arrays
    rows, n_inner = idx.shape[1], idx.shape[2]
    per_outer = params.n_chunks * params.n_bands
    o, chunk, band = unit // per_outer, unit % per_outer // params.n_bands, unit % params.n_bands
    r0, r1 = share(rows, chunk, params.n_chunks)
    q0 = band * params.band
    # The columns of out, not of idx: one index may stand for a whole row (see above).
    rq = (r0, r1, q0, min(q0 + params.band, out.shape[2] // w))
    src = data[outer_map[o]]
    # Whole rows where a band spans them (constant rows' plans): narrow bands of random
    # rows went row by row, each rejected by the ends' compare (1.25x square-random).
    if params.same and params.n_bands == 1 and rq[3] - rq[2] > 1:
        bad = _whole_rows(out[o], src, idx[o], inner_map, known[o], rq, w)
    else:
        bad = _elements(out[o], src, idx[o], inner_map, params.same, rq, w)
    return bad if bad < 0 else o * rows * n_inner + bad


@_inlined
def _task(arrays: Any, params: GatherParams, known: Any, task: int, n_tasks: int, w: int) -> int:
    """Run task ``task``'s share of the units; -1, or the first of their first bad indices.
    ``known``: which rows hold one value, where a check found it (see :func:`_whole_rows`)."""
    n_units = arrays[2].shape[0] * params.n_chunks * params.n_bands
    lo, hi = share(n_units, task, n_tasks)
    if params.n_chunks == 1 and arrays[2].shape[2] == 1 and arrays[0].shape[2] == w:
        return _column(arrays, lo, hi, w)  # a unit per outer position, in C order
    first = -1
    for unit in range(lo, hi):
        bad = _unit(arrays, params, known, unit, w)
        # Units of several bands are not in C order among themselves (a later band may
        # hold the bad index of an earlier row), so every unit runs and the smallest
        # position wins: only a call that raises pays for it.
        if bad >= 0 and (first < 0 or bad < first):
            first = bad
    return first


# Made once per process: _runtime.gather_kernel calls it under _runtime's lock, as
# kernels.scatter's kernels are.
@cache
def gather_kernel(width: int) -> Any:
    """The kernel for elements of ``width`` unsigned words; ``width`` is its cache key.

    ``kernel(arrays, flat, params, check, n_tasks)`` takes ``(out, data, idx, outer_map,
    inner_map)`` and the fields of a :class:`scatterx_numba._views.GatherParams` as plain
    tuples (numba types them faster than named ones), ``flat``: the indices in their
    memory order, 1-D, and ``check``: whether every index is checked before the first
    write: 0 not, 1 in ``flat``, 2 row by row, each row's constancy noted for the
    whole-row units (a plan of constant rows). It returns each task's -1 or the flat
    C-order position in ``idx`` of its first bad index; or, where the check found one,
    each check share's -1 or first bad position (in ``flat``, or in C order for a check
    of rows). As for the scatter kernels
    (:mod:`scatterx_numba.kernels.scatter`), the width is a free variable of plain data, so
    numba's disk cache keys each closure's code on it.
    """

    def gather(arrays: Any, flat: Any, param_tuple: Any, check: int, n_tasks: int) -> Any:
        # One parallel region, whether or not every index is checked first (into the
        # caller's out), as kernels.scatter's columns kernel: check shares of ``flat`` (the
        # indices in memory order) claimed at run time, then the tasks, claimed too.
        params = GatherParams(*param_tuple)
        size = arrays[1].shape[1]
        n_checks = max(1, -(-flat.size // CHECK_INDICES)) if check else 0
        checks, claims = np.empty(n_checks, np.int64), counters(3)
        idx = arrays[2]
        # Whether each row holds one value, found by a check of rows; else no row known.
        rows = np.empty((idx.shape[0], idx.shape[1] if check == 2 else 0), np.uint8)
        bad = np.empty(n_tasks, np.int64)
        for task in nb.prange(n_tasks):
            if check:
                c = claim(claims, 0, n_checks)
                while c >= 0:
                    if check == 2:
                        checks[c] = _check_rows(idx, size, rows, c, n_checks)
                    else:
                        checks[c] = first_bad_index(flat, size, c, n_checks)
                    fetch_add(claims, 1, 1)
                    c = claim(claims, 0, n_checks)
                wait_until(claims, 1, n_checks)
            if not check or all_in_bounds(checks):
                # int64 both ways: the prange index is unsigned in the parallel region.
                p: Any = claim(claims, 2, n_tasks) if check else np.int64(task)
                while p >= 0:
                    bad[p] = _task(arrays, params, rows, p, n_tasks, width)
                    p = claim(claims, 2, n_tasks) if check else np.int64(-1)
        return checks if check and not all_in_bounds(checks) else bad

    gather.__qualname__ = f"gather_{width}"  # its own cache index: see kernels.scatter
    return nb.njit(parallel=True, cache=True, nogil=True)(gather)
