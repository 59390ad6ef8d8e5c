"""The per-task bodies of the kernels: each strategy's first and second pass.

Shapes seen here (the runner reshapes every call to them): ``out`` is ``(outer, size,
inner)`` in C order and holds a copy of data, or gets it inside the tasks from ``data``
(same shape) when the params' copy flag says so; ``idx`` and ``upd`` are
``(outer', rows, inner')`` with ``outer' <= outer`` and ``inner' <= inner`` (the
off-axis dimensions of indices may be shorter than those of data). ``outer_map`` and
``inner_map`` give, for each flat outer/inner position of ``idx``, the flat outer/inner
position of ``out``.

A task returns -1, or the flat C-order position in ``idx`` of the first index it met out
of bounds (it stops there: the caller raises and drops ``out``).
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from ._rows import apply_rows, copy_rows, find_row_targets
from ._segments import last_writers, merge_last, merge_segments, reduce_segment

#: Strategy codes, as :mod:`scatterx_numba._plan` names them.
COLUMNS, OWNERS, ROWS, SEGMENTS = 0, 1, 2, 3

# Called only from the cached kernels, so they are compiled (and cached) inside them.
_inner = nb.njit(cache=False)


@_inner
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


@_inner
def _scatter_rows(dst: Any, idx: Any, upd: Any, q0: int, q1: int, size: int, op: Any) -> int:
    """Columns ``q0:q1`` of one outer position, rows in order; indices map q to q.

    ``dst`` is ``(size, inner)``, ``idx`` and ``upd`` are ``(rows, inner')``. Returns -1 or
    the flat position in ``idx`` of the first bad index. Positions are cast to unsigned
    once checked, which spares numba's negative-index wrap-around in the hot loop.
    """
    for a in range(idx.shape[0]):
        if q1 - q0 > 1 and _constant_row(idx, a, q0, q1):
            # Embedding-grad: the segment lands in one output row; update it as a vector.
            v = idx[a, q0] + 0
            v = v + size if v < 0 else v
            if v < 0 or v >= size:
                return int(a * idx.shape[1] + q0)
            row = dst[np.uint64(v)]
            values = upd[np.uint64(a)]
            for q in range(np.uint64(q0), np.uint64(q1)):
                row[q] = op(row[q], values[q])
            continue
        for q in range(q0, q1):
            v = idx[a, q] + 0
            v = v + size if v < 0 else v
            if v < 0 or v >= size:
                return int(a * idx.shape[1] + q)
            uq = np.uint64(q)
            target = (np.uint64(v), uq)
            dst[target] = op(dst[target], upd[np.uint64(a), uq])
    return -1


@_inner
def _scatter_mapped(dst: Any, idx: Any, upd: Any, inner_map: Any, q0: int, q1: int, op: Any) -> int:
    """As :func:`_scatter_rows` when indices' inner shape differs from data's (mapped)."""
    size = dst.shape[0]
    for a in range(idx.shape[0]):
        for q in range(q0, q1):
            v = idx[a, q] + 0
            v = v + size if v < 0 else v
            if v < 0 or v >= size:
                return int(a * idx.shape[1] + q)
            target = (np.uint64(v), np.uint64(inner_map[q]))
            dst[target] = op(dst[target], upd[a, q])
    return -1


@_inner
def _copy_slab(dst: Any, src: Any) -> None:
    """``dst[...] = src`` for C-contiguous arrays, as one flat (vectorised) loop."""
    flat_dst, flat_src = dst.reshape(dst.size), src.reshape(src.size)
    for k in range(flat_dst.size):
        flat_dst[k] = flat_src[k]


@_inner
def column_task(
    out: Any,
    data: Any,
    idx: Any,
    upd: Any,
    outer_map: Any,
    inner_map: Any,
    task: int,
    params: Any,
    op: Any,
) -> int:
    """Columns ``(o, q0:q1)`` of one band: rows walked in ascending order, as the contract's loop.

    Updates that meet at one output element differ only in their row, so walking the rows
    of a band in order reproduces the sequential loop bit for bit. With ``copy`` (bands
    of whole rows, indices as wide as data: the tasks tile the output) the task first
    copies its slab of data: the copy then runs on every thread, and the slab is in cache
    when its updates come.
    """
    _, band, inner_same, copy = params
    rows, n_inner = idx.shape[1], idx.shape[2]
    n_bands = (n_inner + band - 1) // band
    o = task // n_bands
    q0 = (task % n_bands) * band
    q1 = min(q0 + band, n_inner)
    oo = outer_map[o]
    if copy:
        _copy_slab(out[oo], data[oo])
    if inner_same:
        bad = _scatter_rows(out[oo], idx[o], upd[o], q0, q1, out.shape[1], op)
    else:
        bad = _scatter_mapped(out[oo], idx[o], upd[o], inner_map, q0, q1, op)
    return bad if bad < 0 else int(o * rows * n_inner + bad)


@_inner
def owner_task(
    out: Any, idx: Any, upd: Any, outer_map: Any, inner_map: Any, priv: Any, task: int, op: Any
) -> int:
    """Rows ``[r0, r1)`` of ``out`` (all columns), owned by this task alone.

    The task walks every update in C order and applies those that land in its rows, on a
    private copy of its own rows (``priv[task]``, one ``n_tasks``-th of ``out``) whose extra
    last slot absorbs the others without a branch (a random target makes that branch
    unpredictable). Then it writes its rows back. Each output element sees its updates in
    C order: the sequential loop's bits. All private copies together hold one ``out``.
    """
    n_tasks = priv.shape[0]
    n_outer, size, inner = out.shape
    rows, n_inner = idx.shape[1], idx.shape[2]
    r0 = task * size // n_tasks
    r1 = (task + 1) * size // n_tasks
    mine = (r1 - r0) * inner
    buf = priv[task]
    for oo in range(n_outer):
        buf[oo * mine : (oo + 1) * mine] = out[oo, r0:r1].reshape(mine)
    dump = n_outer * mine
    for o in range(idx.shape[0]):
        base = outer_map[o] * mine - r0 * inner
        for a in range(rows):
            for q in range(n_inner):
                v = idx[o, a, q] + 0
                if v < 0:
                    v += size
                if v < 0 or v >= size:
                    return int((o * rows + a) * n_inner + q)
                target = base + v * inner + inner_map[q]
                target = target if (v >= r0 and v < r1) else dump
                buf[target] = op(buf[target], upd[o, a, q])
    for oo in range(n_outer):
        out[oo, r0:r1] = buf[oo * mine : (oo + 1) * mine].reshape(r1 - r0, inner)
    return -1


@_inner
def one_pass(arrays: Any, params: Any, task: int, n_tasks: int, op: Any) -> int:
    """One column band, or one owner of output rows; -1 or the first bad index it met.

    ``arrays`` lacks the last (positions) array of the two-pass kernels: numba's dispatch
    costs about a microsecond per array, which small calls feel.
    """
    out, data, idx, upd, outer_map, inner_map, priv = arrays
    if params[0] == OWNERS:
        return owner_task(out, idx, upd, outer_map, inner_map, priv, task, op)
    return column_task(out, data, idx, upd, outer_map, inner_map, task, params, op)


@_inner
def row_target_task(arrays: Any, params: Any, task: int, n_tasks: int, op: Any) -> int:
    """Rows, first pass: copy a share of data, find the target rows of a share of indices.

    Returns -1, the first bad index position the task met, or ``_plan.NOT_CONSTANT``.
    """
    out, data, idx, _, _, _, _, positions = arrays
    if params[3]:
        copy_rows(out, data, task, n_tasks)
    return find_row_targets(idx, out.shape[1], positions[0], task, n_tasks)


@_inner
def apply_row_task(arrays: Any, params: Any, task: int, n_tasks: int, op: Any) -> None:
    """Rows, second pass: the update rows that land in this task's output rows."""
    out, _, _, upd, outer_map, _, _, positions = arrays
    apply_rows(out, upd, outer_map, positions[0], task, n_tasks, op)


@_inner
def segment_task(arrays: Any, params: Any, task: int, n_tasks: int, op: Any) -> int:
    """Segments, first pass: fold this task's segment into its partial."""
    out, _, idx, upd, outer_map, inner_map, priv, _ = arrays
    return reduce_segment(out, idx, upd, outer_map, inner_map, priv[task], task, n_tasks, op)


@_inner
def merge_task(arrays: Any, params: Any, task: int, n_tasks: int, op: Any) -> None:
    """Segments, second pass: this task's share of output elements."""
    out, data, _, _, _, _, priv, _ = arrays
    merge_segments(out, data, priv, params[3], task, n_tasks, op)


@_inner
def last_writer_task(arrays: Any, params: Any, task: int, n_tasks: int, op: Any) -> int:
    """Segments for ``none``, first pass: the last position of each target in the segment."""
    out, _, idx, _, outer_map, inner_map, _, positions = arrays
    return last_writers(out, idx, outer_map, inner_map, positions[task], task, n_tasks)


@_inner
def merge_last_task(arrays: Any, params: Any, task: int, n_tasks: int, op: Any) -> None:
    """Segments for ``none``, second pass: this task's share of output elements."""
    out, data, _, upd, _, _, _, positions = arrays
    merge_last(out, data, upd, positions, params[3], task, n_tasks)


@_inner
def all_in_bounds(bad: Any) -> bool:
    """Whether no first-pass task found a bad index (or a row that is not constant).

    Out of line: written in the parallel kernel, ``(bad == -1).all()`` would become one
    more parallel region to compile.
    """
    return bool(bad.min() == -1 and bad.max() == -1)
