"""The segments strategy: few long columns (a 1-D scatter, a histogram), split along the axis.

Each task reduces one contiguous segment of the axis into a private partial result (for
``none``: the position of the last update per element), then each task merges a range of
output elements: data, then the partials in segment order.
That equals the sequential loop only for reductions whose fold can be regrouped bit for
bit: ``none`` (the last update wins), max and min (the first NaN, else the last (float16:
first) of the extreme values, wins), and integer and bool arithmetic (wrapping add and
mul). A partial starts at the reduction's identity (-inf for max, 0 for integer add...),
which keeps every value bit for bit, and spares a mark per element (and its test in the
merge). Float add and mul are not regroupable: they never come here (see
:mod:`scatterx_numba.plan.strategy`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .ops import fold
from .tasks import inner_function, share, wrap


@inner_function
def _record(scratch: Any, k: Any, position: Any, values: Any, op: Any) -> None:
    """Record the update at flat ``position`` on element ``k`` of a task's scratch.

    ``values`` None (``none``): the update is the last at ``k`` so far, keep its position.
    Otherwise fold its value into the partial. (numba prunes the other branch while
    compiling: ``values`` is None or an array in every signature.)
    """
    if values is None:
        scratch[k] = position
    else:
        scratch[k] = fold(op, scratch[k], values[np.uint64(position)])


@inner_function
def _walk_segment(arrays: Any, scratch: Any, task: int, n_tasks: int, values: Any, op: Any) -> int:
    """:func:`_record` each update of rows ``[a0, a1)`` of every column, in C order.

    ``values``: the updates, flat, or None to record positions. Returns -1 or the flat
    position of the segment's first bad index: the walk is in C order, so the first it
    meets is the segment's first.
    """
    out, idx, mine = arrays.out, arrays.idx, scratch[task]
    size, inner = out.shape[1], out.shape[2]
    a0, a1 = share(idx.shape[1], task, n_tasks)
    rows, n_inner = idx.shape[1], idx.shape[2]
    if idx.shape[0] == 1 and n_inner == 1:
        # One column (a 1-D scatter): a flat loop, whose position is the row itself.
        column = idx.reshape(rows)
        base = arrays.outer_map[0] * size * inner + arrays.inner_map[0]
        for a in range(np.uint64(a0), np.uint64(a1)):  # unsigned: see kernels.tasks.copy_span
            v = wrap(column[a], size)
            if v < 0 or v >= size:
                return int(a)
            _record(mine, np.uint64(base + v * inner), a, values, op)
        return -1
    for o in range(idx.shape[0]):
        base = arrays.outer_map[o] * size
        for a in range(np.uint64(a0), np.uint64(a1)):
            for q in range(n_inner):
                position = (o * rows + int(a)) * n_inner + q
                v = wrap(idx[o, a, q], size)
                if v < 0 or v >= size:
                    return int(position)
                k = np.uint64((base + v) * inner + arrays.inner_map[q])
                _record(mine, k, position, values, op)
    return -1


@inner_function
def fold_task(arrays: Any, scratch: Any, params: Any, task: int, n_tasks: int, op: Any) -> int:
    """First pass: fold this task's segment into its partial, which holds op's identity."""
    values = arrays.upd.reshape(arrays.upd.size)
    return _walk_segment(arrays, scratch, task, n_tasks, values, op)


@inner_function
def last_position_task(
    arrays: Any, scratch: Any, params: Any, task: int, n_tasks: int, op: Any
) -> int:
    """First pass for ``none``: the flat position of the segment's last update at each
    target, in this task's row of positions (which holds -1)."""
    return _walk_segment(arrays, scratch, task, n_tasks, None, op)


@inner_function
def merge_task(arrays: Any, scratch: Any, params: Any, task: int, n_tasks: int, op: Any) -> None:
    """Second pass: each element of this task's share is data, then each segment's
    partial, folded in segment order.

    An element no update of a segment reached meets op's identity, which leaves every
    value bit for bit as it is (NaNs, signed zeros and infinities included).
    """
    flat = arrays.out.reshape(arrays.out.size)
    source = arrays.data.reshape(arrays.data.size)
    partials = scratch
    k0, k1 = share(flat.size, task, n_tasks)
    for k in range(np.uint64(k0), np.uint64(k1)):
        value = source[k] if params.copy else flat[k]
        for s in range(partials.shape[0]):
            value = fold(op, value, partials[s, k])
        flat[k] = value


@inner_function
def merge_last_task(
    arrays: Any, scratch: Any, params: Any, task: int, n_tasks: int, op: Any
) -> None:
    """Second pass for ``none``: each element of this task's share takes its last update,
    or data."""
    flat = arrays.out.reshape(arrays.out.size)
    source = arrays.data.reshape(arrays.data.size)
    values = arrays.upd.reshape(arrays.upd.size)
    last = scratch
    k0, k1 = share(flat.size, task, n_tasks)
    for k in range(np.uint64(k0), np.uint64(k1)):
        position = -1
        for s in range(last.shape[0]):
            position = max(position, last[s, k])  # later segments hold later positions
        if position >= 0:
            flat[k] = values[position]
        else:
            flat[k] = source[k] if params.copy else flat[k]
