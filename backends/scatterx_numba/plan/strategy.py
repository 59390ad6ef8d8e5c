"""How a call is split into tasks, from the shapes alone (plain Python: no numba import).

A scatter picks a strategy (:func:`plan`); a gather cuts its indices into units
(:func:`gather_plan`) of the words it moves (:func:`words`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._views import GatherParams, Strategy

#: Narrowest column band, in bytes of a row of data.
MIN_BAND_BYTES = 2048
#: Column tasks per thread, for balance when a few outer positions are split into bands.
COLUMN_TASKS_PER_THREAD = 4
#: Fewer columns than this many per thread cannot be balanced: use output-row owners.
COLUMNS_PER_THREAD = 4
#: Owners copy the output once per thread; worth it only when updates dwarf the output.
OWNER_UPDATES_PER_ELEMENT = 2
#: Owners read every update on every thread: with fewer threads than this, that costs
#: more than one sequential column, so a few-column call runs as columns.
OWNER_MIN_THREADS = 4
#: Whole-row (embedding) tasks need rows this long: each task scans every row's target.
ROWS_MIN_INNER = 8
#: Binned calls need this many updates: with fewer (their inputs in cache), one ordered
#: pass beat binning on two threads.
BINNED_MIN_ROWS = 1 << 19
#: Updates per wave of the binned strategy: its bins (a position and a value per update)
#: stay a few MiB, and far under glibc's 32 MiB mmap threshold, above which each call
#: would fault in fresh pages.
BINNED_WAVE_ROWS = 1 << 20


@dataclass(frozen=True)
class Plan:
    """How one call is split into parallel tasks.

    Attributes
    ----------
    strategy
        ``COLUMNS``: each task owns a band of inner positions of one outer position and
        walks its rows in order. ``OWNERS``: each task owns a range of output rows and
        walks every update, applying those that land there. ``SEGMENTS``: each task
        folds a segment of the axis into a private partial, then merges a range of output
        elements. ``ROWS``: each task finds the target rows of a share of the (constant)
        index rows, then applies the update rows that land in its range of output rows.
        ``BINNED``: in waves, the first task applies the first updates of each wave in
        order while the others bin the rest by output half, in order; then two tasks
        apply each half's bins.
    n_tasks
        Number of tasks (``prange`` iterations).
    band
        Inner positions per column task; binned: updates per wave.
    """

    strategy: Strategy
    n_tasks: int
    band: int


def split(index_shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """``(outer, rows, inner)`` of ``index_shape`` around ``axis``."""
    return (
        math.prod(index_shape[:axis]),
        index_shape[axis],
        math.prod(index_shape[axis + 1 :]),
    )


def wave_rows(rows: int) -> int:
    """Updates per wave of a binned call: equal waves of at most ``BINNED_WAVE_ROWS``."""
    waves = -(-rows // BINNED_WAVE_ROWS)
    return -(-rows // waves)


def _binnable(data_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int) -> bool:
    """Whether a call is one long column that the binned strategy serves: data one column
    too (its copy is the column), enough updates, positions that fit in 32 bits."""
    outer, rows, inner = split(index_shape, axis)
    size = data_shape[axis]
    one_column = outer * inner == 1 and math.prod(data_shape) == size
    return one_column and rows >= BINNED_MIN_ROWS and size <= 1 << 32


def column_band(inner: int, outer: int, itemsize: int, n_threads: int) -> int:
    """Inner positions per column task.

    Whole rows when there are enough outer positions to share out, or when a row is short
    (then the task also copies its rows of data, contiguous, and a walk over whole rows
    reads indices and updates sequentially). Otherwise about ``COLUMN_TASKS_PER_THREAD`` bands
    per thread, each at least ``MIN_BAND_BYTES`` wide: narrower bands make every row a
    separate short read, and measured slower on embedding-grad and square-random.
    """
    if outer >= COLUMN_TASKS_PER_THREAD * n_threads:
        return max(1, inner)
    wanted = -(-inner // (COLUMN_TASKS_PER_THREAD * n_threads))
    return max(1, min(inner, max(wanted, MIN_BAND_BYTES // itemsize)))


def plan(
    data_shape: tuple[int, ...],
    index_shape: tuple[int, ...],
    axis: int,
    itemsize: int,
    n_threads: int,
    *,
    regroupable: bool = False,
    constant_rows: bool | Callable[[], bool] = False,
) -> Plan:
    """Pick the strategy for one call from its shapes and the thread count.

    Many columns: column bands. Few columns and many more updates than output elements
    (a 1-D scatter, a histogram): segments when the reduction's fold can be regrouped
    (``regroupable``: none, max, min, integer and bool arithmetic), else output-row owners
    on enough threads, else (one column, from ``BINNED_MIN_ROWS`` updates) binned waves.
    Too few column bands to share out and index rows that look constant
    (``constant_rows``, or a function that tells, called only when the shapes leave the
    choice open: embedding-grad): whole-row tasks. Otherwise column bands anyway (few long
    columns: correct, with as much parallelism as there are columns).
    """
    outer, rows, inner = split(index_shape, axis)
    columns = outer * inner
    total = math.prod(data_shape)
    size = data_shape[axis]
    few_columns = columns < COLUMNS_PER_THREAD * n_threads
    many_updates = rows * columns >= OWNER_UPDATES_PER_ELEMENT * total
    if n_threads > 1 and few_columns and many_updates and regroupable and rows >= n_threads:
        return Plan(Strategy.SEGMENTS, n_threads, 1)
    if n_threads >= OWNER_MIN_THREADS and few_columns and size >= n_threads and many_updates:
        return Plan(Strategy.OWNERS, n_threads, 1)
    binnable = many_updates and not regroupable and _binnable(data_shape, index_shape, axis)
    if n_threads > 1 and binnable:
        return Plan(Strategy.BINNED, n_threads, wave_rows(rows))
    band = column_band(inner, outer, itemsize, n_threads)
    n_tasks = outer * -(-inner // band)
    long_rows = inner >= ROWS_MIN_INNER and rows >= n_threads
    few_bands = n_threads > 1 and n_tasks < COLUMN_TASKS_PER_THREAD * n_threads
    open_choice = long_rows and few_bands and index_shape[axis + 1 :] == data_shape[axis + 1 :]
    # Asked last, and only then: looking at the indices costs microseconds a call.
    if open_choice and (constant_rows() if callable(constant_rows) else constant_rows):
        return Plan(Strategy.ROWS, n_threads, inner)
    return Plan(Strategy.COLUMNS, n_tasks, band)


# ---- gather -----------------------------------------------------------------------------

#: Fewest indices per task: below this a task's start-up costs more than its share of work.
MIN_TASK_INDICES = 16384
#: Gather tasks per thread: the work per index is even, and a second task per thread evens
#: out a thread that starts late.
GATHER_TASKS_PER_THREAD = 2
#: Most bytes of data a unit's column band may span: it then stays in a core's L2 cache
#: while the unit walks its rows (random rows of a wider band would each miss).
SLAB_BYTES = 512 * 1024
#: Narrowest column band, in bytes of a row: two cache lines. Each row of a band is a
#: separate short read of indices and write of the output, which narrower bands pay for
#: more often than they save in misses on data.
LINE_BYTES = 128
#: The widest word the kernels move: wider elements (complex128) travel as several.
WORD_BYTES = 8
#: The unsigned integer of each width: what moves bits (a gather, a scatter's ``none``).
BITS: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.uint8),
    2: np.dtype(np.uint16),
    4: np.dtype(np.uint32),
    8: np.dtype(np.uint64),
}


def words(dtype: np.dtype[Any]) -> tuple[np.dtype[Any], int]:
    """The unsigned dtype an element of ``dtype`` is moved as, and how many per element.

    A gather copies elements and computes nothing, so only the width matters: every dtype
    of one width shares the kernel's compiled signature, and the bits (NaN payloads, the
    bytes of a non-native byte order) arrive untouched.
    """
    if dtype.itemsize <= WORD_BYTES:
        return BITS[dtype.itemsize], 1
    return BITS[WORD_BYTES], dtype.itemsize // WORD_BYTES


def gather_plan(
    data_shape: tuple[int, ...],
    index_shape: tuple[int, ...],
    axis: int,
    element_bytes: int,
    n_threads: int,
    *,
    constant_rows: bool,
) -> tuple[GatherParams, int]:
    """The units of a gather and the number of tasks that share them.

    Column bands keep what a unit reads of data in cache: a band of ``size`` rows of data
    spans at most ``SLAB_BYTES``, but is at least ``LINE_BYTES`` wide; unless index rows
    hold one value each (``constant_rows``: an embedding gradient), whose whole rows are
    contiguous copies. Rows are cut into chunks only when there are too few units to
    share out: a few tasks per thread, none with less than ``MIN_TASK_INDICES`` indices.
    """
    outer, rows, inner = split(index_shape, axis)
    same = data_shape[axis + 1 :] == index_shape[axis + 1 :]
    size = data_shape[axis]
    if constant_rows:
        band = inner
    else:
        band = max(SLAB_BYTES // max(1, size * element_bytes), LINE_BYTES // element_bytes, 1)
        band = min(band, inner)
    n_bands = -(-inner // band)
    total = outer * rows * inner
    wanted = max(1, min(GATHER_TASKS_PER_THREAD * n_threads, total // MIN_TASK_INDICES))
    n_chunks = min(rows, max(1, -(-wanted // (outer * n_bands))))
    return GatherParams(same, band, n_bands, n_chunks), min(wanted, outer * n_bands * n_chunks)
