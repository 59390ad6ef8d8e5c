"""The binned strategy: one long column whose reduction must meet its updates in order.

Float add and mul cannot be regrouped (see :mod:`scatterx_numba.kernels.segments`): every
output element has to receive its updates in C order, one after the other. The call runs
in waves of ``params.band`` updates, two passes each:

- first pass: the first task applies the wave's first updates, in order, to a private
  copy of the column (``base``, copied from data in the first wave). Meanwhile each other
  task bins its stretch of the rest, in order, by output half: an update for the lower
  half goes to the next slot from the left end of the task's stretch of the bins, one
  for the upper half to the next slot from the right end, so no counter lives in memory
  and no branch depends on the index;
- second pass: two tasks each own one half of the column and apply that half's bins of
  every stretch in turn (the right-end bins backwards, which is their order).

Each element so meets the first task's updates, then each binning task's, every one in
C order: the sequential loop's bits, for any number of tasks and any thread count. The
bins of a wave stay a few MiB. Nothing is written to the output before the last
wave's second pass, when every index has been found in bounds: the waves before work on
``base``, and the last one's owners copy their half of it out before applying the bins.

Scratch (``plan.launch._scratch``): one row of storage elements, ``[positions | base | bins]``:
the bins' values (``params.band`` of them) at the end, the column's copy before them,
and the bins' positions as uint32 in the front part.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .ops import fold
from .tasks import copy_span, inner_function, share, wrap

_ONE = np.uint64(1)
#: What binning an update costs, in percent of applying it in place, with both running at
#: once: the first task of a wave applies ``this / ((n_tasks - 1) * 100 + this)`` of it.
#: Compiled into the kernels: a change needs a cold numba cache (and comes with a change
#: of ``kernels.scatter``, whose stamp numba's cache checks). Machine-dependent: 100 was best on
#: the AMD EPYC of 2026-11, 160-200 on the Intel Xeon of 2026-12-03, where binning costs
#: 1.95 ns an update against 1.52 for applying (docs/backends/numba.md).
BINNED_COST_PERCENT = 160


@inner_function
def _regions(scratch: Any, size: int, capacity: int) -> tuple[Any, Any, Any]:
    """The bins' positions (uint32), the column's copy and the bins' values in ``scratch``."""
    row = scratch[0]
    end = row.shape[0]
    front = end - capacity - size
    return row[:front].view(np.uint32), row[front : end - capacity], row[end - capacity :]


@inner_function
def _wave(rows: int, band: int, wave: int, n_tasks: int) -> tuple[int, int, int]:
    """``(start, middle, stop)`` of a wave: the first task applies ``[start, middle)``.

    The first task's share balances the others' binning against its applying (see
    ``BINNED_COST_PERCENT``: compiled in, so a change needs a cold cache).
    """
    start = wave * band
    stop = min(start + band, rows)
    weight = BINNED_COST_PERCENT
    middle = start + (stop - start) * weight // ((n_tasks - 1) * 100 + weight)
    return start, middle, stop


@inner_function
def _stretch(middle: int, stop: int, binner: int, n_tasks: int) -> tuple[int, int]:
    """Slots ``[k0, k1)`` of binning task ``binner`` (1, 2, ...): updates ``middle + k``."""
    return share(stop - middle, binner - 1, n_tasks - 1)


@inner_function
def _apply_in_order(target: Any, column: Any, values: Any, a0: int, a1: int, op: Any) -> int:
    """Fold updates ``[a0, a1)`` into ``target`` in order; -1 or the first bad position.

    A negative index, wrapped, that is still negative turns into a huge unsigned
    position: one compare checks both ends.
    """
    size = target.shape[0]
    limit = np.uint64(size)
    for a in range(np.uint64(a0), np.uint64(a1)):
        v = np.uint64(wrap(column[a], size))
        if v >= limit:
            return int(np.int64(a))  # signed: uint64 and -1 would unify as float64
        target[v] = fold(op, target[v], values[a])
    return -1


@inner_function
def _bin_halves(
    positions: Any, bins: Any, column: Any, values: Any, a0: int, a1: int, k0: int, size: int
) -> int:
    """Bin updates ``[a0, a1)`` into slots ``[k0, k0 + a1 - a0)`` by output half.

    Lower-half updates fill the slots from the left, the others from the right; the slot
    is picked arithmetically (a branch on a random index mispredicts half the time).
    Returns -1 or the first bad position.
    """
    limit, half = np.uint64(size), np.uint64(size // 2)
    low = np.uint64(k0)
    high = np.uint64(k0 + (a1 - a0)) - _ONE
    for a in range(np.uint64(a0), np.uint64(a1)):
        v = np.uint64(wrap(column[a], size))
        if v >= limit:
            return int(np.int64(a))
        below = np.uint64(v < half)
        slot = high + below * (low - high)
        positions[slot] = np.uint32(v)
        bins[slot] = values[a]
        low += below
        high -= _ONE - below
    return -1


@inner_function
def _first_high(positions: Any, k0: int, k1: int, half: int) -> int:
    """The first slot of ``[k0, k1)`` binned for the upper half: the stretch is partitioned."""
    lo, hi = k0, k1
    while lo < hi:
        mid = (lo + hi) // 2
        if positions[mid] < half:
            lo = mid + 1
        else:
            hi = mid
    return lo


@inner_function
def _apply_bins(target: Any, positions: Any, bins: Any, k0: int, k1: int, op: Any) -> None:
    """Fold the bins of slots ``[k0, k1)`` into ``target``, left to right."""
    for k in range(np.uint64(k0), np.uint64(k1)):
        v = positions[k]
        target[v] = fold(op, target[v], bins[k])


@inner_function
def _apply_bins_backwards(
    target: Any, positions: Any, bins: Any, k0: int, k1: int, op: Any
) -> None:
    """Fold the bins of slots ``[k0, k1)`` into ``target``, right to left (their order)."""
    k = np.uint64(k1)
    while k > np.uint64(k0):
        k -= _ONE
        v = positions[k]
        target[v] = fold(op, target[v], bins[k])


@inner_function
def bin_task(arrays: Any, scratch: Any, params: Any, task: int, n_tasks: int, op: Any) -> int:
    """First pass of wave ``task // n_tasks``: apply its first updates, or bin a stretch.

    Returns -1 or the position of the first bad index the task met.
    """
    wave, me = task // n_tasks, task % n_tasks
    size, rows = arrays.out.shape[1], arrays.idx.shape[1]
    column, values = arrays.idx.reshape(rows), arrays.upd.reshape(rows)
    positions, base, bins = _regions(scratch, size, params.band)
    start, middle, stop = _wave(rows, params.band, wave, n_tasks)
    if me == 0:
        if wave == 0:
            copy_span(base, arrays.data.reshape(size), 0, size)
        return _apply_in_order(base, column, values, start, middle, op)
    k0, k1 = _stretch(middle, stop, me, n_tasks)
    return _bin_halves(positions, bins, column, values, middle + k0, middle + k1, k0, size)


@inner_function
def apply_bins_task(
    arrays: Any, scratch: Any, params: Any, task: int, n_tasks: int, op: Any
) -> None:
    """Second pass of wave ``task // n_tasks``: tasks 0 and 1 apply the bins of their half.

    In the last wave the half is the output's, which first gets its part of ``base``.
    """
    wave, me = task // n_tasks, task % n_tasks
    owners = min(2, n_tasks)
    if me >= owners:
        return
    size, rows = arrays.out.shape[1], arrays.idx.shape[1]
    positions, base, bins = _regions(scratch, size, params.band)
    _, middle, stop = _wave(rows, params.band, wave, n_tasks)
    target = base
    if stop == rows:
        target = arrays.out.reshape(size)
        lo, hi = share(size, me, owners)
        copy_span(target, base, lo, hi)
    for binner in range(1, n_tasks):
        k0, k1 = _stretch(middle, stop, binner, n_tasks)
        split = _first_high(positions, k0, k1, size // 2)
        if me == 0:
            _apply_bins(target, positions, bins, k0, split, op)
        else:
            _apply_bins_backwards(target, positions, bins, split, k1, op)
