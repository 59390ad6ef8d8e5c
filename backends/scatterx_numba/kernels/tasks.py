"""The helpers every task shares, and the tasks of the one-pass strategies (columns, owners).

Every task is ``task(arrays, scratch, params, task, n_tasks, op)``: ``arrays`` and
``params`` are the :class:`scatterx_numba._views.KernelArrays` and
:class:`scatterx_numba._views.KernelParams` of the call, ``scratch`` the strategy's own 2-D
array, ``op`` the literal name of the reduction (see :func:`scatterx_numba.kernels.ops.fold`).

Shapes seen here (the runner reshapes every call to them): ``out`` is ``(outer, size,
inner)`` in C order and holds a copy of data, or gets it inside the tasks from ``data``
(same shape) when ``params.copy`` says so; ``idx`` and ``upd`` are ``(outer', rows,
inner')`` with ``outer' <= outer`` and ``inner' <= inner`` (the off-axis dimensions of
indices may be shorter than those of data). ``outer_map`` and ``inner_map`` give, for each
flat outer/inner position of ``idx``, the flat outer/inner position of ``out``.

A first-pass task returns -1, or the flat C-order position in ``idx`` of the first index
it met out of bounds (it stops there: the caller raises and drops ``out``).
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba.core import types
from numba.extending import intrinsic

from .claims import item_pointer
from .ops import fold

# Called only from the cached kernels, so they are compiled (and cached) inside them.
inner_function = nb.njit(cache=False)
# Inlined where it is called, before typing: a few lines in the hottest loops.
_inlined = nb.njit(inline="always")


@_inlined
def wrap(index: Any, size: int) -> Any:
    """``index`` as an int64 position, negative ones counted from ``size``; callers check
    ``0 <= position < size``.

    Widened first, so that the position has one type (int64) whatever the index dtype.
    """
    position = np.int64(index)
    return position + size if position < 0 else position


#: Rows of one-column data ahead of the row being scattered whose targets are prefetched.
PREFETCH_ROWS = 4


def _prefetch_typing(typingctx: Any, array: Any, row: Any, column: Any) -> Any:
    """Ask for the cache line of ``array[row, column]`` (2-D), to be written: a hint that
    nothing waits for, and that changes no value. Callers keep the position inside the
    array (a prefetch does not fault, but its address should still be one of the array's)."""
    if not isinstance(array, types.Array) or array.ndim != 2:
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        pointer = item_pointer(context, builder, signature, args)
        bytes_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        function_type = ir.FunctionType(ir.VoidType(), [bytes_pointer, int32, int32, int32])
        function = builder.module.declare_intrinsic("llvm.prefetch", [bytes_pointer], function_type)
        # write, keep in every cache level, data
        builder.call(
            function, [builder.bitcast(pointer, bytes_pointer), int32(1), int32(3), int32(1)]
        )
        return context.get_dummy_value()

    return types.none(array, row, column), codegen


# Typed as Any: called from compiled code only.
prefetch: Any = intrinsic(_prefetch_typing)


@inner_function
def share(count: int, task: int, n_tasks: int) -> tuple[int, int]:
    """``[start, stop)``: task ``task``'s share of ``count`` items."""
    return task * count // n_tasks, (task + 1) * count // n_tasks


@inner_function
def copy_span(dst: Any, src: Any, lo: int, hi: int) -> None:
    """``dst[lo:hi] = src[lo:hi]`` for 1-D arrays.

    The positions run unsigned: with a signed position numba wraps every negative index
    around, a branch that stops the loop from vectorising.
    """
    for k in range(np.uint64(lo), np.uint64(hi)):
        dst[k] = src[k]


@inner_function
def all_in_bounds(bad: Any) -> bool:
    """Whether no first-pass task found a bad index (or a row that is not constant).

    Out of line: written in the parallel kernel, ``(bad == -1).all()`` would become one
    more parallel region to compile.
    """
    return bool(bad.min() == -1 and bad.max() == -1)


@inner_function
def wave_found(found: Any, n_tasks: int) -> Any:
    """The first-pass results of the first wave that found a bad index, or of the last
    wave: ``found`` holds ``n_tasks`` per wave, the waves one after the other. Out of line,
    as :func:`all_in_bounds`."""
    n_waves = found.shape[0] // n_tasks
    for wave in range(n_waves - 1):
        mine = found[wave * n_tasks : (wave + 1) * n_tasks]
        if not all_in_bounds(mine):
            return mine
    return found[(n_waves - 1) * n_tasks :]


@inner_function
def first_bad_index(idx: Any, size: int, task: int, n_tasks: int) -> int:
    """-1, or the flat C position of the first index out of bounds in task ``task``'s share
    of ``idx`` (C-ordered): the smallest over the tasks is the first of all.

    Min and max first, without a branch out of the loop (it vectorises, as
    ``kernels.passes.index_range``); only a share that holds a bad index is walked again.
    """
    flat = idx.reshape(idx.size)
    k0, k1 = share(flat.size, task, n_tasks)
    if k0 == k1:
        return -1
    low = high = flat[k0]
    for k in range(np.uint64(k0), np.uint64(k1)):
        value = flat[k]
        low = min(low, value)
        high = max(high, value)
    if low >= -size and high < size:
        return -1
    for k in range(np.uint64(k0), np.uint64(k1)):
        v = wrap(flat[k], size)
        if v < 0 or v >= size:
            return int(k)
    return -1


@inner_function
def _constant_row(idx: Any, a: int, q0: int, q1: int) -> bool:
    """Whether idx[a, q0:q1] holds one value (an embedding-grad row): xor-or vectorises."""
    row = idx[a]
    first = row[q0]
    if row[q1 - 1] != first:  # rejects random rows at once
        return False
    diff = first ^ first
    for q in range(q0 + 1, q1):
        diff |= row[q] ^ first
    return bool(diff == 0)


@inner_function
def _scatter_rows(
    dst: Any, idx: Any, upd: Any, q0: int, q1: int, size: int, checked: bool, op: Any
) -> int:
    """Columns ``q0:q1`` of one outer position, rows in order; indices map q to q.

    ``dst`` is ``(size, inner)``, ``idx`` and ``upd`` are ``(rows, inner')``. Returns -1 or
    the flat position in ``idx`` of the first bad index. Positions are cast to unsigned
    once checked, which spares numba's negative-index wrap-around in the hot loop.
    ``checked``: the indices are known in bounds already, and are not looked at again.
    """
    for a in range(idx.shape[0]):
        if q1 - q0 > 1 and _constant_row(idx, a, q0, q1):
            # Embedding-grad: the segment lands in one output row; update it as a vector.
            v = wrap(idx[a, q0], size)
            if v < 0 or v >= size:
                return int(a * idx.shape[1] + q0)
            row = dst[np.uint64(v)]
            values = upd[np.uint64(a)]
            for q in range(np.uint64(q0), np.uint64(q1)):
                row[q] = fold(op, row[q], values[q])
            continue
        for q in range(q0, q1):
            v = wrap(idx[a, q], size)
            if not checked and (v < 0 or v >= size):
                return int(a * idx.shape[1] + q)
            uq = np.uint64(q)
            target = (np.uint64(v), uq)
            dst[target] = fold(op, dst[target], upd[np.uint64(a), uq])
    return -1


@inner_function
def _scatter_columns(arrays: Any, params: Any, o0: int, o1: int, op: Any) -> int:
    """Outer positions ``o0:o1`` of one-column data (``(outer, size, 1)``: last-axis-sparse,
    a few updates per row of data), each copied first where ``params.copy`` says.

    One flat loop over unsigned positions of 2-D views (the last, unit axis dropped): per
    unit, the generic path's call, views and 2-D loop over one column cost several times
    the hand-written loop, and on the 3-D arrays each position is multiplied by the unit
    axis' length, known only at run time (1.5x the 2-D loop for add, in place).
    The targets of the row ``PREFETCH_ROWS`` ahead are prefetched (not where the row was
    just copied): the random lines of a row miss one at a time otherwise, and out of cache
    the loop waits on each (3x, add in place, one thread).
    ``params.checked``: the indices are known in bounds (the pass before an in-place
    call), and the loop does not look again. Returns -1 or the first bad C position.
    """
    size, rows = arrays.out.shape[1], arrays.idx.shape[1]
    out = arrays.out.reshape(arrays.out.shape[0], size)
    data = arrays.data.reshape(arrays.data.shape[0], size)
    idx = arrays.idx.reshape(arrays.idx.shape[0], rows)
    upd = arrays.upd.reshape(arrays.upd.shape[0], rows)
    zero, last, ahead = np.uint64(0), np.uint64(size - 1), np.uint64(PREFETCH_ROWS)
    for o in range(np.uint64(o0), np.uint64(o1)):
        oo = np.uint64(arrays.outer_map[o])
        if params.copy:
            for k in range(zero, np.uint64(size)):
                out[oo, k] = data[oo, k]
        elif o + ahead < np.uint64(o1):
            o_ahead = o + ahead
            oo_ahead = np.uint64(arrays.outer_map[o_ahead])
            for a in range(zero, np.uint64(rows)):
                # clamped: an index not checked yet may point anywhere
                prefetch(out, oo_ahead, min(np.uint64(wrap(idx[o_ahead, a], size)), last))
        for a in range(zero, np.uint64(rows)):
            v = wrap(idx[o, a], size)
            if not params.checked and (v < 0 or v >= size):
                return int(o * rows + a)
            target = (oo, np.uint64(v))
            out[target] = fold(op, out[target], upd[o, a])
    return -1


@inner_function
def _scatter_mapped(dst: Any, idx: Any, upd: Any, inner_map: Any, q0: int, q1: int, op: Any) -> int:
    """As :func:`_scatter_rows` when indices' inner shape differs from data's (mapped)."""
    size = dst.shape[0]
    for a in range(idx.shape[0]):
        for q in range(q0, q1):
            v = wrap(idx[a, q], size)
            if v < 0 or v >= size:
                return int(a * idx.shape[1] + q)
            target = (np.uint64(v), np.uint64(inner_map[q]))
            dst[target] = fold(op, dst[target], upd[a, q])
    return -1


@inner_function
def _copy_slab(dst: Any, src: Any) -> None:
    """``dst[...] = src`` for C-contiguous arrays, as one flat (vectorised) loop."""
    flat_dst, flat_src = dst.reshape(dst.size), src.reshape(src.size)
    for k in range(flat_dst.size):
        flat_dst[k] = flat_src[k]


@inner_function
def column_task(arrays: Any, scratch: Any, params: Any, task: int, n_tasks: int, op: Any) -> int:
    """Task ``task``'s share of the column units ``(o, q0:q1)``, bands of ``params.band``
    inner positions: each unit's rows walked in ascending order, as the contract's loop.

    Updates that meet at one output element differ only in their row, so walking the rows
    of a band in order reproduces the sequential loop bit for bit, however the units are
    shared out (a launch has as many tasks as units, or a few per thread: a unit of one
    column of 64 updates costs less than a task). With ``params.copy`` (bands of whole
    rows, indices as wide as data: the units tile the output) each unit first copies its
    slab of data: the copy then runs on every thread, and the slab is in cache when its
    updates come. Returns -1 or the first bad position in C order of its units.
    """
    n_bands = (arrays.idx.shape[2] + params.band - 1) // params.band
    u0, u1 = share(arrays.idx.shape[0] * n_bands, task, n_tasks)
    if arrays.idx.shape[2] == 1 and arrays.out.shape[2] == 1:
        return _scatter_columns(arrays, params, u0, u1, op)  # a unit per outer position
    first = -1
    for unit in range(u0, u1):
        bad = _column_unit(arrays, params, unit // n_bands, unit % n_bands, op)
        if bad >= 0 and (first < 0 or bad < first):
            first = bad
    return first


@inner_function
def _column_unit(arrays: Any, params: Any, o: int, b: int, op: Any) -> int:
    """Band ``b`` of outer position ``o`` (see :func:`column_task`)."""
    out, idx, upd, band = arrays.out, arrays.idx, arrays.upd, params.band
    rows, n_inner = idx.shape[1], idx.shape[2]
    q0 = b * band
    q1 = min(q0 + band, n_inner)
    oo = arrays.outer_map[o]
    if params.copy:
        _copy_slab(out[oo], arrays.data[oo])
    elif params.inner_same:
        _warm_band(out[oo], q0, q1)
    if params.inner_same:
        bad = _scatter_rows(out[oo], idx[o], upd[o], q0, q1, out.shape[1], params.checked, op)
    else:
        bad = _scatter_mapped(out[oo], idx[o], upd[o], arrays.inner_map, q0, q1, op)
    return bad if bad < 0 else int(o * rows * n_inner + bad)


#: The most bytes of a band that :func:`_warm_band` asks into cache before its updates
#: come: about a core's L2 here (1 MiB), so that the lines asked first are still there.
WARM_BYTES = 1 << 20


@inner_function
def _warm_band(dst: Any, q0: int, q1: int) -> None:
    """Prefetch the lines of columns ``q0:q1`` of ``dst`` (2-D: the rows of one outer
    position) where they fit in :data:`WARM_BYTES`, in memory order.

    Data the kernel updates in place (or copied into ``out`` before the launch) is out of
    cache, and the band's random rows then miss one at a time; asked for in order, the
    lines stream in (a copy in the kernel does the same for a new result). The 3-D
    middle-axis case in place: 24 ms without, 12-16 ms with, one process, 2 threads.
    """
    size = dst.shape[0]
    if size * (q1 - q0) * dst.itemsize > WARM_BYTES:
        return
    step = max(1, 64 // dst.itemsize)
    for r in range(size):
        for q in range(q0, q1, step):
            prefetch(dst, r, q)


@inner_function
def _copy_run(dst: Any, d0: int, src: Any, s0: int, count: int) -> None:
    """``dst[d0:d0 + count] = src[s0:s0 + count]`` for 1-D arrays, as one plain loop
    (numba's slice assignment compiles to broadcasting code many times longer)."""
    for k in range(np.uint64(count)):
        dst[np.uint64(d0) + k] = src[np.uint64(s0) + k]


@inner_function
def owner_task(arrays: Any, scratch: Any, params: Any, task: int, n_tasks: int, op: Any) -> int:
    """Rows ``[r0, r1)`` of ``out`` (all columns), owned by this task alone.

    The task walks every update in C order and applies those that land in its rows, on a
    private copy of its own rows (``scratch[task]``, one ``n_tasks``-th of ``out``)
    whose extra last slot absorbs the others without a branch (a random target makes that
    branch unpredictable). Then it writes its rows back. Each output element sees its
    updates in C order: the sequential loop's bits. All private copies together hold one
    ``out``.
    """
    out, idx, upd, inner_map = arrays.out, arrays.idx, arrays.upd, arrays.inner_map
    n_outer, size, inner = out.shape
    rows, n_inner = idx.shape[1], idx.shape[2]
    r0, r1 = share(size, task, n_tasks)
    mine = (r1 - r0) * inner
    buf = scratch[task]
    flat = out.reshape(out.size)
    for oo in range(n_outer):
        _copy_run(buf, oo * mine, flat, (oo * size + r0) * inner, mine)
    dump = n_outer * mine
    for o in range(idx.shape[0]):
        base = arrays.outer_map[o] * mine - r0 * inner
        for a in range(rows):
            for q in range(n_inner):
                v = wrap(idx[o, a, q], size)
                if v < 0 or v >= size:
                    return int((o * rows + a) * n_inner + q)
                target = base + v * inner + inner_map[q]
                target = target if (v >= r0 and v < r1) else dump
                buf[target] = fold(op, buf[target], upd[o, a, q])
    for oo in range(n_outer):
        _copy_run(flat, (oo * size + r0) * inner, buf, oo * mine, mine)
    return -1
