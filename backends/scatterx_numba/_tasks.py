"""The per-task bodies of the kernels: one column band, or one owner of output rows.

Shapes seen here (the runner reshapes every call to them): ``out`` and ``data`` are
``(outer, size, inner)`` in C order; ``idx`` and ``upd`` are ``(outer', rows, inner')``
with ``outer' <= outer`` and ``inner' <= inner`` (the off-axis dimensions of indices may
be shorter than those of data). ``outer_map`` and ``inner_map`` give, for each flat
outer/inner position of ``idx``, the flat outer/inner position of ``out``.

A task returns -1, or the flat C-order position in ``idx`` of the first index it met out
of bounds (it stops there: the caller raises and drops ``out``).
"""

from __future__ import annotations

from typing import Any

import numba as nb

# Called only from the cached kernels, so they are compiled (and cached) inside them.
_inner = nb.njit(cache=False)


@_inner
def _copy_band(out: Any, data: Any, oo: int, q0: int, q1: int) -> None:
    """out[oo, :, q0:q1] = data[oo, :, q0:q1], as one flat run when the band is whole rows."""
    size, inner = out.shape[1], out.shape[2]
    if q0 == 0 and q1 == inner:
        dst = out[oo].reshape(size * inner)
        src = data[oo].reshape(size * inner)
        for k in range(size * inner):
            dst[k] = src[k]
        return
    for s in range(size):
        for q in range(q0, q1):
            out[oo, s, q] = data[oo, s, q]


@_inner
def _constant_row(idx: Any, o: int, a: int, q0: int, q1: int) -> bool:
    """Whether idx[o, a, q0:q1] holds one value (an embedding-grad row): xor-or vectorises."""
    first = idx[o, a, q0]
    diff = first ^ first
    for q in range(q0 + 1, q1):
        diff |= idx[o, a, q] ^ first
    return bool(diff == 0)


@_inner
def column_task(
    out: Any,
    data: Any,
    idx: Any,
    upd: Any,
    outer_map: Any,
    inner_map: Any,
    task: int,
    band: int,
    copy: bool,
    inner_same: bool,
    op: Any,
) -> int:
    """Columns ``(o, q0:q1)`` of one band: rows walked in ascending order, as the contract's loop.

    Updates that meet at one output element differ only in their row, so walking the rows
    of a band in order reproduces the sequential loop bit for bit. A band of ``band``
    inner positions keeps the touched part of ``out`` (``size x band``) in cache.
    """
    rows, n_inner = idx.shape[1], idx.shape[2]
    size = out.shape[1]
    n_bands = (n_inner + band - 1) // band
    o = task // n_bands
    q0 = (task % n_bands) * band
    q1 = min(q0 + band, n_inner)
    oo = outer_map[o]
    if copy:
        _copy_band(out, data, oo, q0, q1)
    for a in range(rows):
        if inner_same and q1 - q0 > 1 and _constant_row(idx, o, a, q0, q1):
            # Embedding-grad: the segment lands in one output row; update it as a vector.
            v = idx[o, a, q0] + 0
            if v < 0:
                v += size
            if v < 0 or v >= size:
                return int((o * rows + a) * n_inner + q0)
            for q in range(q0, q1):
                out[oo, v, q] = op(out[oo, v, q], upd[o, a, q])
            continue
        for q in range(q0, q1):
            v = idx[o, a, q] + 0
            if v < 0:
                v += size
            if v < 0 or v >= size:
                return int((o * rows + a) * n_inner + q)
            qq = q if inner_same else inner_map[q]
            out[oo, v, qq] = op(out[oo, v, qq], upd[o, a, q])
    return -1


@_inner
def owner_task(
    out: Any, idx: Any, upd: Any, outer_map: Any, inner_map: Any, priv: Any, task: int, op: Any
) -> int:
    """Rows ``[r0, r1)`` of ``out`` (all columns), owned by this task alone.

    The task walks every update in C order and applies those that land in its rows, on a
    private copy of ``out`` whose extra last slot absorbs the others without a branch (a
    random target makes that branch unpredictable). Then it writes its rows back. Each
    output element sees its updates in C order: the sequential loop's bits.
    """
    n_tasks = priv.shape[0]
    n_outer, size, inner = out.shape
    rows, n_inner = idx.shape[1], idx.shape[2]
    total = n_outer * size * inner
    flat = out.reshape(total)
    buf = priv[task]
    for k in range(total):
        buf[k] = flat[k]
    r0 = task * size // n_tasks
    r1 = (task + 1) * size // n_tasks
    for o in range(idx.shape[0]):
        base = outer_map[o] * size
        for a in range(rows):
            for q in range(n_inner):
                v = idx[o, a, q] + 0
                if v < 0:
                    v += size
                if v < 0 or v >= size:
                    return int((o * rows + a) * n_inner + q)
                target = (base + v) * inner + inner_map[q]
                target = target if (v >= r0 and v < r1) else total
                buf[target] = op(buf[target], upd[o, a, q])
    for oo in range(n_outer):
        for k in range((oo * size + r0) * inner, (oo * size + r1) * inner):
            flat[k] = buf[k]
    return -1


@_inner
def run_task(arrays: Any, params: Any, task: int, op: Any) -> int:
    """One task of a kernel: an owner of output rows, or a column band."""
    out, data, idx, upd, outer_map, inner_map, priv = arrays
    band, copy, inner_same, owners = params
    if owners:
        return owner_task(out, idx, upd, outer_map, inner_map, priv, task, op)
    return column_task(out, data, idx, upd, outer_map, inner_map, task, band, copy, inner_same, op)
