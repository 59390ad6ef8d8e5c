"""Strategy selection from the shapes alone (plain Python: no numba import)."""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Bytes of output a column band may touch: the band then stays in a core's L2 cache
#: while its rows are walked (half of a 1 MiB L2, leaving room for indices and updates).
BAND_BYTES = 512 * 1024
#: Fewer columns than this many per thread cannot be balanced: use output-row owners.
COLUMNS_PER_THREAD = 4
#: Owners copy the output once per thread; worth it only when updates dwarf the output.
OWNER_UPDATES_PER_ELEMENT = 2


@dataclass(frozen=True)
class Plan:
    """How one call is split into parallel tasks.

    Attributes
    ----------
    strategy
        ``"columns"``: each task owns a band of inner positions of one outer position and
        walks its rows in order. ``"owners"``: each task owns a range of output rows and
        walks every update, applying those that land there.
    n_tasks
        Number of tasks (``prange`` iterations).
    band
        Inner positions per column task.
    """

    strategy: str
    n_tasks: int
    band: int


def split(index_shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """``(outer, rows, inner)`` of ``index_shape`` around ``axis``."""
    return (
        math.prod(index_shape[:axis]),
        index_shape[axis],
        math.prod(index_shape[axis + 1 :]),
    )


def column_band(size: int, inner: int, outer: int, itemsize: int, n_threads: int) -> int:
    """Inner positions per column task.

    Wide enough to fill cache lines and vectorise whole-row updates, narrow enough that
    ``size x band`` output elements stay in cache, and small enough to give every thread
    work when there are few outer positions.
    """
    line = max(1, 64 // itemsize)
    band = max(line, BAND_BYTES // max(1, size * itemsize) // line * line)
    if outer < n_threads:
        per_thread = -(-inner // -(-n_threads // outer))
        band = min(band, max(line, per_thread))
    return max(1, min(band, inner))


def plan(
    data_shape: tuple[int, ...],
    index_shape: tuple[int, ...],
    axis: int,
    itemsize: int,
    n_threads: int,
) -> Plan:
    """Pick the strategy for one call from its shapes and the thread count.

    Many columns: column bands. Few columns and many more updates than output elements
    (a 1-D scatter, a histogram): output-row owners. Otherwise column bands anyway (few
    long columns: correct, with as much parallelism as there are columns).
    """
    outer, rows, inner = split(index_shape, axis)
    columns = outer * inner
    total = math.prod(data_shape)
    size = data_shape[axis]
    few_columns = columns < COLUMNS_PER_THREAD * n_threads
    many_updates = rows * columns >= OWNER_UPDATES_PER_ELEMENT * total
    if n_threads > 1 and few_columns and size >= n_threads and many_updates:
        return Plan("owners", n_threads, 1)
    band = column_band(size, inner, outer, itemsize, n_threads)
    return Plan("columns", outer * -(-inner // band), band)
