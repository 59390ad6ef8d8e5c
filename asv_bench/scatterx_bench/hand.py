"""Hand-written single-purpose loops, one per standard case, reduction and mode: the yardstick
that ``python asv_bench/bench.py --hand`` times scatterx's numba backend against.

Each loop does the work a user of that case needs and no less: it reads every index and
checks it (negative indices count from the end, as in ONNX), keeps the C order of the
updates that meet at one element, and gives scatterx's bits. A new-mode loop returns a new
array; an in-place loop writes into the caller's data, and only once every index is known
good (a separate parallel check first, or a first pass that writes only private scratch).
The parallel splits are scatterx's (:mod:`scatterx_numba.plan.strategy`), fixed for the case:
column bands for the squares, outer planes for mid-axis-3d, rows for last-axis-sparse,
owners of output rows for embedding-grad, segments for 1d-histogram (none, max); its add,
which no split leaves bit for bit, runs on one thread in order.

The reduction is a compile-time choice (a closure per reduction), so each loop compiles to
the one fold it runs; nothing here is cached on disk: the loops compile when first made.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar, cast

import numpy as np

Array = np.ndarray[Any, Any]
#: A hand loop: ``loop(data, indices, updates)``, the case's arrays; returns the result.
HandLoop = Callable[[Array, Array, Array], Array]

#: Columns per band of the square cases (scatterx's ``plan.strategy.column_band`` for 4096 float32
#: columns on 2 threads: 2048 bytes).
SQUARE_BAND = 512
#: Rows ahead of the one being scattered whose targets last-axis-sparse prefetches (as
#: scatterx's one-column rows, ``scatterx_numba.kernels.tasks.PREFETCH_ROWS``).
AHEAD_ROWS = 4
CHECK_CHUNK = 1 << 16  # indices per share of a separate bounds check


def _nb() -> Any:
    import numba

    return numba


_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(**options: Any) -> Callable[[_F], _F]:
    """``numba.njit(**options)``, typed: the decorated function keeps its signature."""
    return cast(Callable[[_F], _F], _nb().njit(**options))


@cache
def _folds() -> dict[str, Any]:
    inline = _jit(inline="always")

    @inline
    def take_new(old: Any, new: Any) -> Any:
        return new

    @inline
    def add(old: Any, new: Any) -> Any:
        return old + new

    @inline
    def maximum(old: Any, new: Any) -> Any:
        keep = (old != old) | (old > new)  # np.maximum's NaNs and ties, as scatterx
        return old if keep else new

    return {"none": take_new, "add": add, "max": maximum}


@cache
def _any_true() -> Any:

    @_jit(nogil=True)
    def any_true(flags: Any) -> Any:
        for flag in flags:  # noqa: SIM110 (numba compiles no generator here)
            if flag:
                return True
        return False

    return any_true


@cache
def _check() -> Any:
    """``bad_in_flat(flat, size)``: whether any index of a 1-D array is out of
    ``[-size, size)``, checked in parallel shares."""
    nb, any_true = _nb(), _any_true()

    @_jit(parallel=True, nogil=True)
    def bad_in_flat(flat: Any, size: int) -> Any:
        n = flat.size
        shares = (n + CHECK_CHUNK - 1) // CHECK_CHUNK
        bad = np.empty(shares, np.bool_)
        for s in nb.prange(shares):
            lo, hi = s * CHECK_CHUNK, min(n, (s + 1) * CHECK_CHUNK)
            found = False
            for i in range(lo, hi):
                k = flat[i]
                found |= (k < -size) | (k >= size)
            bad[s] = found
        return any_true(bad)

    return bad_in_flat


def _bad(indices: Array, size: int) -> Any:
    return bool(_check()(indices.reshape(-1), size))


def _target(data: Array, indices: Array, size: int, new: bool) -> Array:
    """Where a loop writes: a new array, or ``data`` itself once every index is known good
    (in place, nothing is written before that)."""
    if new:
        return np.empty(data.shape, data.dtype)
    if _bad(indices, size):
        _raise_bad()
    return data


def _raise_bad() -> None:
    msg = "an index is out of bounds"
    raise IndexError(msg)


# ---- square (and square-transposed): column bands, rows walked in order ----------------


@cache
def _square(reduction: str, new: bool) -> HandLoop:
    nb, fold, any_true = _nb(), _folds()[reduction], _any_true()

    @_jit(parallel=True, nogil=True)
    def bands(out: Any, data: Any, idx: Any, upd: Any, band: int) -> Any:
        size, cols = out.shape
        n_bands = (cols + band - 1) // band
        bad = np.empty(n_bands, np.bool_)
        for b in nb.prange(n_bands):
            c0, c1 = b * band, min(cols, (b + 1) * band)
            if new:
                for r in range(size):
                    for c in range(c0, c1):
                        out[r, c] = data[r, c]
            found = False
            for i in range(idx.shape[0]):
                for c in range(c0, c1):
                    k = idx[i, c]
                    k = k + size if k < 0 else k
                    if k < 0 or k >= size:
                        found = True
                        continue
                    out[k, c] = fold(out[k, c], upd[i, c])
            bad[b] = found
        return any_true(bad)

    def loop(data: Array, indices: Array, updates: Array) -> Array:
        # A transposed case runs on its C-ordered memory: the same elements, in the order
        # of the axis, which is what the updates meeting at one element differ in.
        flip = not data.flags.c_contiguous
        d, i, u = (a.T for a in (data, indices, updates)) if flip else (data, indices, updates)
        out = _target(d, i, d.shape[0], new)
        if bands(out, d, i, u, SQUARE_BAND):
            _raise_bad()
        return out.T if flip else out

    return loop


# ---- mid-axis-3d: one task per outer plane, its rows walked in order -----------------


@cache
def _mid_axis(reduction: str, new: bool) -> HandLoop:
    nb, fold, any_true = _nb(), _folds()[reduction], _any_true()

    @_jit(parallel=True, nogil=True)
    def planes(out: Any, data: Any, idx: Any, upd: Any) -> Any:
        outer, size, inner = out.shape
        bad = np.empty(outer, np.bool_)
        for o in nb.prange(outer):
            if new:
                for r in range(size):
                    for c in range(inner):
                        out[o, r, c] = data[o, r, c]
            found = False
            for i in range(idx.shape[1]):
                for c in range(inner):
                    k = idx[o, i, c]
                    k = k + size if k < 0 else k
                    if k < 0 or k >= size:
                        found = True
                        continue
                    out[o, k, c] = fold(out[o, k, c], upd[o, i, c])
            bad[o] = found
        return any_true(bad)

    def loop(data: Array, indices: Array, updates: Array) -> Array:
        out = _target(data, indices, data.shape[1], new)
        if planes(out, data, indices, updates):
            _raise_bad()
        return out

    return loop


# ---- last-axis-sparse: one task per row ----------------------------------------------


@cache
def _last_axis(reduction: str, new: bool) -> HandLoop:
    nb, fold, any_true = _nb(), _folds()[reduction], _any_true()
    from scatterx_numba.kernels.tasks import prefetch  # llvm.prefetch, for writing

    @_jit(parallel=True, nogil=True)
    def rows(out: Any, data: Any, idx: Any, upd: Any) -> Any:
        n_rows, size = out.shape
        bad = np.empty(n_rows, np.bool_)
        for r in nb.prange(n_rows):
            ahead = r + AHEAD_ROWS
            if ahead < n_rows:  # the cache lines of a row ahead's targets, asked early
                for j in range(idx.shape[1]):
                    k = idx[ahead, j]
                    k = k + size if k < 0 else k
                    if 0 <= k < size:
                        prefetch(out, ahead, k)
            if new:
                for c in range(size):
                    out[r, c] = data[r, c]
            found = False
            for j in range(idx.shape[1]):
                k = idx[r, j]
                k = k + size if k < 0 else k
                if k < 0 or k >= size:
                    found = True
                    continue
                out[r, k] = fold(out[r, k], upd[r, j])
            bad[r] = found
        return any_true(bad)

    def loop(data: Array, indices: Array, updates: Array) -> Array:
        out = _target(data, indices, data.shape[1], new)
        if rows(out, data, indices, updates):
            _raise_bad()
        return out

    return loop


# ---- embedding-grad: the target row of each index row, then owners of output rows -------


@cache
def _embedding(reduction: str, new: bool) -> HandLoop:
    nb, fold, any_true = _nb(), _folds()[reduction], _any_true()

    @_jit(parallel=True, nogil=True)
    def targets(idx: Any, size: int, target: Any, n_tasks: int) -> Any:
        n = idx.shape[0]
        bad = np.empty(n_tasks, np.bool_)
        for t in nb.prange(n_tasks):
            found = False
            for i in range(t * n // n_tasks, (t + 1) * n // n_tasks):
                k = idx[i, 0]
                for j in range(idx.shape[1]):
                    found |= idx[i, j] != k
                k = k + size if k < 0 else k
                found |= (k < 0) | (k >= size)
                target[i] = k
            bad[t] = found
        return any_true(bad)

    @_jit(parallel=True, nogil=True)
    def owners(out: Any, data: Any, target: Any, upd: Any, n_tasks: int) -> None:
        size, width = out.shape
        for t in nb.prange(n_tasks):
            lo, hi = t * size // n_tasks, (t + 1) * size // n_tasks
            if new:
                for r in range(lo, hi):
                    for c in range(width):
                        out[r, c] = data[r, c]
            for i in range(target.shape[0]):
                k = target[i]
                if lo <= k < hi:
                    for c in range(width):
                        out[k, c] = fold(out[k, c], upd[i, c])

    def loop(data: Array, indices: Array, updates: Array) -> Array:
        n_tasks = nb.get_num_threads()
        target = np.empty(indices.shape[0], np.int64)
        if targets(indices, data.shape[0], target, n_tasks):
            msg = "an index is out of bounds, or an index row holds two values"
            raise IndexError(msg)
        out = np.empty(data.shape, data.dtype) if new else data
        owners(out, data, target, updates, n_tasks)
        return out

    return loop


# ---- 1d-histogram: segments (none, max: regroupable), or in order on one thread (add) --


@cache
def _histogram(reduction: str, new: bool) -> HandLoop:
    nb, fold, any_true = _nb(), _folds()[reduction], _any_true()
    last = reduction == "none"

    @_jit(parallel=True, nogil=True)
    def segments(idx: Any, upd: Any, size: int, part: Any, n_tasks: int) -> Any:
        # Segment t of the updates into part[t]: the last position (none) or the max.
        n = idx.shape[0]
        bad = np.empty(n_tasks, np.bool_)
        for t in nb.prange(n_tasks):
            mine = part[t]
            if last:
                mine[:] = -1
            else:
                mine[:] = -np.inf
            found = False
            for i in range(t * n // n_tasks, (t + 1) * n // n_tasks):
                k = idx[i]
                k = k + size if k < 0 else k
                if k < 0 or k >= size:
                    found = True
                    continue
                if last:
                    mine[k] = i
                else:
                    mine[k] = fold(mine[k], upd[i])
            bad[t] = found
        return any_true(bad)

    @_jit(parallel=True, nogil=True)
    def merge(out: Any, data: Any, upd: Any, part: Any, n_tasks: int) -> None:
        size = out.shape[0]
        for t in nb.prange(n_tasks):
            for k in range(t * size // n_tasks, (t + 1) * size // n_tasks):
                value = data[k]
                for s in range(part.shape[0]):
                    if last:
                        p = int(part[s, k])
                        if p >= 0:
                            value = upd[p]
                    else:
                        value = fold(value, part[s, k])
                out[k] = value

    @_jit(nogil=True)
    def in_order(out: Any, data: Any, idx: Any, upd: Any) -> Any:
        # add regroups no bits: one thread, in order (owners of output ranges, each
        # reading every update, measured 5x slower on 2 threads; scatterx bins instead).
        size = out.shape[0]
        if new:
            for k in range(size):
                out[k] = data[k]
        for i in range(idx.shape[0]):
            k = idx[i]
            k = k + size if k < 0 else k
            if k < 0 or k >= size:
                return True
            out[k] = fold(out[k], upd[i])
        return False

    def loop(data: Array, indices: Array, updates: Array) -> Array:
        n_tasks = nb.get_num_threads()
        size = data.shape[0]
        out = np.empty(data.shape, data.dtype) if new else data
        if reduction == "add":
            if not new and _bad(indices, size):
                _raise_bad()
            if in_order(out, data, indices, updates):
                _raise_bad()
            return out
        positions = np.int32 if indices.size < 1 << 31 else np.int64
        part = np.empty((n_tasks, size), positions if last else updates.dtype)
        if segments(indices, updates, size, part, n_tasks):
            _raise_bad()
        merge(out, data, updates, part, n_tasks)
        return out

    return loop


_MAKERS: dict[str, Callable[[str, bool], HandLoop]] = {
    "square-random": _square,
    "square-transposed": _square,
    "mid-axis-3d": _mid_axis,
    "last-axis-sparse": _last_axis,
    "embedding-grad": _embedding,
    "1d-histogram": _histogram,
}
#: The reductions that have hand loops.
REDUCTIONS = ("none", "add", "max")


def hand_loop(case: str, reduction: str, mode: str) -> HandLoop:
    """The hand loop of a standard or layout case, a reduction and a mode."""
    if case not in _MAKERS or reduction not in REDUCTIONS:
        msg = f"no hand loop for {case} {reduction}: cases {', '.join(_MAKERS)}, {REDUCTIONS}"
        raise ValueError(msg)
    return _MAKERS[case](reduction, mode == "new")
