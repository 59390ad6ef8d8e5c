"""The parallel passes a call may make before its kernel: the bounds, and data's copy.

A kernel meets its first bad index part-way through, when some of its tasks have written
already: into a new result that is then dropped, that is harmless; into the caller's
``out`` (contract section 7) it is not, so a call with ``out`` checks every index first,
in one parallel pass over them (:func:`index_range`), and writes nothing when one is out
of bounds.

Where the kernel's tasks cannot copy their own part of data into the output (column bands
narrower than a row, owners), :func:`copy_words` copies it on every thread before the
launch: each thread faults in and fills its share of a new output's pages, which one
thread copying alone would do at a fraction of the memory bandwidth.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

#: Indices per task: one task reads this many before its threads' results are compared.
CHUNK = 1 << 16


@nb.njit(parallel=True, cache=True, nogil=True)
def index_range(idx: Any, n_tasks: int) -> Any:
    """The smallest and largest of the 1-D ``idx``, as int64: ``(n_tasks, 2)`` per task.

    Min and max without a branch out of the loop, so that it vectorises; each task takes
    one contiguous share (a task with none reports 0 and 0).
    """
    found = np.zeros((n_tasks, 2), np.int64)
    n = idx.size
    for task in nb.prange(n_tasks):
        start, stop = task * n // n_tasks, (task + 1) * n // n_tasks
        if start == stop:
            continue
        # In the indices' own width (int32 compares vectorise twice as wide), and unsigned
        # positions: numba's wrap-around of negative ones would stop vectorising.
        low = high = idx[start]
        for k in range(np.uint64(start), np.uint64(stop)):
            value = idx[k]
            low = min(low, value)
            high = max(high, value)
        found[task, 0] = low
        found[task, 1] = high
    return found


@nb.njit(parallel=True, cache=True, nogil=True)
def copy_words(dst: Any, src: Any, n_tasks: int) -> None:
    """``dst[:] = src`` for 1-D arrays of one dtype, each task one contiguous share."""
    n = dst.size
    for task in nb.prange(n_tasks):
        start, stop = task * n // n_tasks, (task + 1) * n // n_tasks
        for k in range(np.uint64(start), np.uint64(stop)):
            dst[k] = src[k]


def kernel(name: str) -> Any:
    """The pass named ``name`` (``"index_range"``, ``"copy_words"``), for ``_runtime`` to
    load on first use."""
    return {"index_range": index_range, "copy_words": copy_words}[name]
