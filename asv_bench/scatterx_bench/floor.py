"""The memory floor of a cell of ``bench.py --hand``: the fewest bytes any implementation of
the call must move between memory and the cores, at the best bandwidth measured here.

A lower bound, so every assumption is the optimistic one:

- ``indices`` and ``updates`` are read once, whole: every element must be seen.
- A new result holds data's values: data is read once and the result written once, unless
  both fit in the last-level cache together (then, call after call, neither leaves it).
- In place, data is not copied: each of its cache lines that an update reaches is read and
  written back once (its distinct lines, counted from the indices), unless data fits in the
  last-level cache (then none need leave it).
- The bytes move at the best rate that a parallel read or copy reaches here.

A contestant's time over the floor is how far it is from the memory's limit; the fastest
peer's time over the floor is the most that any implementation could lead that peer by.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from .base import BenchCase, Mode

#: A cache line's bytes.
LINE = 64
#: The last-level cache assumed where the system does not say (the project's AMD machine's).
DEFAULT_CACHE = 32 << 20
#: The bytes of each array that :func:`bandwidth` streams: well over any cache.
STREAM_BYTES = 256 << 20


def last_level_cache(root: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int:
    """The largest cache that the system lists for CPU 0, in bytes (or the default)."""
    sizes = []
    for entry in root.glob("index*/size"):
        text = entry.read_text().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
        digits = text.rstrip("KMB")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=DEFAULT_CACHE)


def touched_lines(data: Any, indices: Any, axis: int) -> int:
    """The distinct cache lines of ``data`` that a scatter of ``indices`` along ``axis``
    writes: each element's address from data's strides, at data's own address."""
    offsets = np.full(indices.shape, data.__array_interface__["data"][0], dtype=np.int64)
    for dim, stride in enumerate(data.strides):
        if dim == axis:
            offsets += indices.astype(np.int64) * stride
        else:
            shape = [1] * indices.ndim
            shape[dim] = indices.shape[dim]
            offsets += (np.arange(indices.shape[dim], dtype=np.int64) * stride).reshape(shape)
    return int(np.unique(offsets.ravel() // LINE).size)


def floor_bytes(case: BenchCase, mode: Mode, cache: int) -> int:
    """The least bytes that ``case`` in ``mode`` moves (see the module), with a last-level
    cache of ``cache`` bytes."""
    streamed = int(case.indices.nbytes + case.updates.nbytes)
    data = int(case.data.nbytes)
    if mode == "new":
        return streamed + (0 if 2 * data <= cache else 2 * data)
    if data <= cache:
        return streamed
    return streamed + 2 * LINE * touched_lines(case.data, case.indices, case.axis)


def bandwidth(repeat: int = 5, size: int = STREAM_BYTES) -> float:
    """The best bytes per second of a parallel numba read (a sum) and copy of ``size`` bytes
    here, over ``repeat`` runs each; a copy counts its bytes read and written."""
    reader, copier = _kernels()
    source = np.ones(size // 8)
    target = np.empty_like(source)
    reader(source)
    copier(source, target)
    best = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        reader(source)
        best = max(best, size / (time.perf_counter() - start))
        start = time.perf_counter()
        copier(source, target)
        best = max(best, 2 * size / (time.perf_counter() - start))
    return best


def _kernels() -> tuple[Any, Any]:
    import numba  # the --hand table's loops need it already

    @numba.njit(parallel=True, cache=False)
    def reader(source: Any) -> float:  # pragma: no cover - compiled
        total = 0.0
        for k in numba.prange(source.size):
            total += source[k]
        return total

    @numba.njit(parallel=True, cache=False)
    def copier(source: Any, target: Any) -> None:  # pragma: no cover - compiled
        for k in numba.prange(source.size):
            target[k] = source[k]

    return reader, copier
