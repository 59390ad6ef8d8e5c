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

import numpy as np

from .._views import NOT_CONSTANT
from .ops import fold
from .tasks import copy_span, inner_function, share, wrap


@inner_function
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


@inner_function
def _row_value(row: Any) -> tuple[bool, Any]:
    """Whether ``row`` holds one value, and that value: xor-or vectorises."""
    first = row[0]
    diff = first ^ first
    for q in range(1, row.shape[0]):
        diff |= row[q] ^ first
    return bool(diff == 0), first


@inner_function
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
        constant, value = _row_value(idx[f // rows, f % rows])
        if not constant:
            return NOT_CONSTANT
        v = wrap(value, size)
        if v < 0 or v >= size:
            return int(int(f) * inner)
        targets[f] = v
    return -1


@inner_function
def apply_rows(
    out: Any, upd: Any, outer_map: Any, targets: Any, task: int, n_tasks: int, op: Any
) -> None:
    """Apply, in ascending order, every update row whose target is one of this task's rows."""
    r0, r1 = share(out.shape[1], task, n_tasks)
    rows, inner = upd.shape[1], upd.shape[2]
    for o in range(upd.shape[0]):
        dst, src = out[outer_map[o]], upd[o]
        for a in range(rows):
            v = targets[o * rows + a]
            if v >= r0 and v < r1:
                # Indexed in 2-D, not through a view of each row: a view a row costs a
                # tenth of the embedding-grad add (measured on 80 float32 columns).
                for q in range(inner):
                    dst[v, q] = fold(op, dst[v, q], src[a, q])


@inner_function
def target_task(arrays: Any, scratch: Any, params: Any, task: int, n_tasks: int, op: Any) -> int:
    """First pass: copy a share of data, find the target rows of a share of index rows.

    Returns -1, the first bad index position the task met, or :data:`NOT_CONSTANT`.
    """
    if params.copy:
        copy_rows(arrays.out, arrays.data, task, n_tasks)
    return find_row_targets(arrays.idx, arrays.out.shape[1], scratch[0], task, n_tasks)


@inner_function
def apply_task(arrays: Any, scratch: Any, params: Any, task: int, n_tasks: int, op: Any) -> None:
    """Second pass: the update rows that land in this task's output rows."""
    apply_rows(arrays.out, arrays.upd, arrays.outer_map, scratch[0], task, n_tasks, op)
