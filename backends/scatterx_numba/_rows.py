"""Whole-row tasks: the copy of data shared out by rows, and the embedding-grad strategy.

Embedding-grad indices hold one value per row (constant along the inner dimensions), so
every update row lands in one output row. The first pass reads each index row once, on
all threads, and keeps its target row; the second gives each task a range of output rows
and applies, in ascending order, the update rows that land there, as whole-row vectors.
Each output element so sees its updates in C order: the sequential loop's bits, for
every reduction.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from ._plan import NOT_CONSTANT

# Called only from the cached kernels, so they are compiled (and cached) inside them.
_inner = nb.njit(cache=False)


@_inner
def share(count: int, task: int, n_tasks: int) -> tuple[int, int]:
    """``[start, stop)``: task ``task``'s share of ``count`` items."""
    return task * count // n_tasks, (task + 1) * count // n_tasks


@_inner
def copy_span(dst: Any, src: Any, lo: int, hi: int) -> None:
    """``dst[lo:hi] = src[lo:hi]`` for 1-D arrays.

    The positions run unsigned: with a signed start numba wraps every index for negative
    values, which stops the loop from vectorising (measured 6x slower on 32 MiB).
    """
    for k in range(np.uint64(lo), np.uint64(hi)):
        dst[k] = src[k]


@_inner
def copy_rows(out: Any, data: Any, task: int, n_tasks: int) -> None:
    """Copy this task's share of output rows from data.

    Every task first-touches the fresh pages it will later update itself, and the copy
    runs on all threads rather than before the launch on one.
    """
    n_outer, size, inner = out.shape
    r0, r1 = share(size, task, n_tasks)
    for o in range(n_outer):
        copy_span(
            out[o].reshape(size * inner), data[o].reshape(size * inner), r0 * inner, r1 * inner
        )


@_inner
def _row_value(row: Any) -> tuple[bool, Any]:
    """Whether ``row`` holds one value, and that value: xor-or vectorises."""
    first = row[0] + 0
    diff = first ^ first
    for q in range(1, row.shape[0]):
        diff |= row[q] ^ first
    return bool(diff == 0), first


@_inner
def find_row_targets(idx: Any, size: int, targets: Any, task: int, n_tasks: int) -> int:
    """Fill ``targets`` (flat over outer x rows) with each row's output row, for this task's rows.

    Returns -1; :data:`NOT_CONSTANT` when a row holds different values (then the first bad
    index, if any, is for the column tasks to find); or the flat position of the first
    element of the first constant row out of bounds: in C order the first bad index in
    this task's rows, since rows before it were constant and in bounds.
    """
    rows, inner = idx.shape[1], idx.shape[2]
    f0, f1 = share(idx.shape[0] * rows, task, n_tasks)
    for f in range(np.uint64(f0), np.uint64(f1)):  # unsigned: see copy_span
        constant, v = _row_value(idx[f // rows, f % rows])
        if not constant:
            return NOT_CONSTANT
        v = v + size if v < 0 else v
        if v < 0 or v >= size:
            return int(int(f) * inner)
        targets[f] = v
    return -1


@_inner
def apply_rows(
    out: Any, upd: Any, outer_map: Any, targets: Any, task: int, n_tasks: int, op: Any
) -> None:
    """Apply, in ascending order, every update row whose target is one of this task's rows."""
    r0, r1 = share(out.shape[1], task, n_tasks)
    rows, inner = upd.shape[1], upd.shape[2]
    for o in range(upd.shape[0]):
        dst = out[outer_map[o]]
        for a in range(rows):
            v = targets[o * rows + a]
            if v >= r0 and v < r1:
                row = dst[v]
                values = upd[o, a]
                for q in range(inner):
                    row[q] = op(row[q], values[q])
