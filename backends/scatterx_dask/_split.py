"""Sorting one run of indices by destination block of data, stably: the split's core.

A stable sort of ``n`` destinations and the gathers it needs cost numpy a radix sort and
three random gathers, about 55 ms a million updates here, five times numba's whole
in-memory scatter of them. Where numba is installed and the run is large, one counting
sort does it instead: a pass counts the updates of each destination, a second writes each
update's order and place in its block at its destination's cursor, in C order, so the
order within a destination is the updates' own. Both give the same answer: the
permutation of a stable sort, and each update's place along the axis in its block.

The kernel is made once per process, under a lock (the splits of a threaded scheduler
ask for it at once), and compiles once per signature (numba's disk cache keeps it between
processes); it holds no interpreter lock, so those splits then run side by side.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

Array = np.ndarray[Any, Any]
#: The fewest updates in a run that the numba kernel sorts (fewer: numpy, which is quick
#: enough there and compiles nothing).
NUMBA_FROM = 1 << 16


class Sorted(NamedTuple):
    """A run of updates sorted stably by destination block: see :func:`by_destination`."""

    order: Array  # each update's place in the run (where asked for, else maybe empty)
    local: Array  # its place along the axis in its block
    values: Array  # its value
    counts: Array  # the updates of each block
    clean: bool  # whether every index is in bounds (False: maybe not, check them)


def by_destination(
    target: Array,
    values: Array,
    starts: Array,
    spans: tuple[int, int],
    kinds: tuple[type[np.signedinteger[Any]], bool],
) -> Sorted:
    """A run of indices ``target`` (1-D, int64) and their ``values``, sorted stably by
    destination block (data's blocks start at ``starts`` along an axis of ``size``, where
    ``spans`` is ``(size, width)``; ``width``, where not 0, the length of every block but
    the last, none longer). ``kinds``: the type of ``local``, and whether ``order`` is
    needed (else it may be None).

    An index out of bounds is sent to the nearest block, at a place outside it (the bounds
    guard raises for it before any apply).
    """
    (size, width), (kind, ordered) = spans, kinds
    kernel = _kernel() if target.size >= NUMBA_FROM else None
    if kernel is None:
        order, local, counts = _numpy(target, starts, size, width)
        return Sorted(order, local.astype(kind), np.take(values, order), counts, False)
    counts = np.zeros(starts.size, np.int64)
    local = np.empty(target.size, kind)
    moved = _numba_moves(values.dtype)
    order = np.empty(target.size if ordered or not moved else 0, np.intp)
    pair = (values, np.empty_like(values)) if moved else (np.empty(0, np.uint8),) * 2
    bad = kernel(target, starts, size, width, counts, order, local, *pair)
    return Sorted(order, local, pair[1] if moved else values[order], counts, bad == 0)


def _numba_moves(dtype: np.dtype[Any]) -> bool:
    """Whether numba moves values of ``dtype`` (in native byte order; not float16)."""
    return dtype.kind in "biufc" and dtype.isnative and (dtype.kind != "f" or dtype.itemsize > 2)


def _numpy(target: Array, starts: Array, size: int, width: int) -> tuple[Array, Array, Array]:
    target = target.copy()
    if target.size and target.min() < 0:
        target[target < 0] += size
    last = starts.size - 1
    found = target // width if width else np.searchsorted(starts, target, side="right") - 1
    dest = np.clip(found, 0, last).astype(_narrow(last))
    if dest.size > 1 and not bool((dest[1:] >= dest[:-1]).all()):
        order = np.argsort(dest, kind="stable")  # a radix sort, for 8 and 16 bits
        dest, target = dest[order], target[order]
    else:
        order = np.arange(dest.size)
    counts = np.bincount(dest, minlength=last + 1)
    return order, target - starts[dest], counts


def _narrow(largest: int) -> type[np.unsignedinteger[Any]]:
    """The narrowest unsigned type that holds ``largest``: numpy's stable sort of 8 and 16
    bits is a radix sort, linear."""
    for kind in (np.uint8, np.uint16):
        if largest <= np.iinfo(kind).max:
            return kind
    return np.uint32


#: :func:`_counting_sort`'s kernel (or None), once made: in a tuple, since None is an answer.
_made: tuple[Callable[..., int] | None] | None = None
_making = threading.Lock()


def _kernel() -> Callable[..., int] | None:
    """:func:`_counting_sort`, made once per process. The lock is taken until it is made:
    splits that ask at once would each make a dispatcher, and each compile (or load) it."""
    global _made
    if _made is None:
        with _making:
            if _made is None:
                _made = (_counting_sort(),)
    return _made[0]


def _counting_sort() -> Callable[..., int] | None:
    """The counting sort, compiled (it returns how many indices are out of bounds, counted
    as it reads them: the split then looks for the first only where there is one); None
    where numba is not installed."""
    if importlib.util.find_spec("numba") is None:
        return None
    import numba

    def counting_sort(
        target: Array,
        starts: Array,
        size: int,
        width: int,
        counts: Array,
        order: Array,
        local: Array,
        values: Array,
        out: Array,
    ) -> int:
        last = starts.size - 1
        found = np.empty(target.size, np.int32)
        inverse = 1.0 / width if width > 0 else 0.0
        bad = 0
        for i in range(target.size):
            t = target[i]
            if t < 0:
                t += size
            bad += (t < 0) | (t >= size)
            if width > 0:  # a product in place of a division (ten times its cost)
                d = int(t * inverse)
                d += (d + 1) * width <= t
                d -= d * width > t
            else:
                d = np.searchsorted(starts, t, side="right") - 1
            d = min(max(d, 0), last)
            found[i] = d
            counts[d] += 1
        cursor = np.empty(starts.size, np.int64)
        total = 0
        for k in range(starts.size):
            cursor[k] = total
            total += counts[k]
        for i in range(target.size):
            d = found[i]
            p = cursor[d]
            cursor[d] = p + 1
            t = target[i]
            if t < 0:
                t += size
            local[p] = t - starts[d]
            if order.size:
                order[p] = i
            if out.size:
                out[p] = values[i]
        return bad

    jitted: Callable[..., int] = numba.njit(cache=True, nogil=True)(counting_sort)
    return jitted
