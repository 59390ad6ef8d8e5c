"""The segments kernels (few long columns): a parallel, disk-cached entry per reduction.

Only reductions whose fold can be regrouped have one (see :mod:`scatterx_numba._segments`).
The first pass folds each task's segment of the axis into a private partial (for
``none``: last positions); the second, run only when the first found every index in
bounds, merges each task's share of the output elements. ``none`` has tasks of its own,
so that no kernel compiles both kinds (one signature compiled in 5 s with both).
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from . import _ops
from ._tasks import (
    all_in_bounds,
    last_writer_task,
    merge_last_task,
    merge_task,
    segment_task,
)

_kernel = nb.njit(parallel=True, cache=True, nogil=True)


@_kernel
def take_new(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = last_writer_task(arrays, params, task, n_tasks, _ops.take_new)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            merge_last_task(arrays, params, task, n_tasks, _ops.take_new)
    return bad


@_kernel
def add(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = segment_task(arrays, params, task, n_tasks, _ops.add)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            merge_task(arrays, params, task, n_tasks, _ops.add)
    return bad


@_kernel
def mul(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = segment_task(arrays, params, task, n_tasks, _ops.mul)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            merge_task(arrays, params, task, n_tasks, _ops.mul)
    return bad


@_kernel
def maximum(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = segment_task(arrays, params, task, n_tasks, _ops.maximum)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            merge_task(arrays, params, task, n_tasks, _ops.maximum)
    return bad


@_kernel
def minimum(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = segment_task(arrays, params, task, n_tasks, _ops.minimum)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            merge_task(arrays, params, task, n_tasks, _ops.minimum)
    return bad


@_kernel
def half_max(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = segment_task(arrays, params, task, n_tasks, _ops.half_max)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            merge_task(arrays, params, task, n_tasks, _ops.half_max)
    return bad


@_kernel
def half_min(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = segment_task(arrays, params, task, n_tasks, _ops.half_min)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            merge_task(arrays, params, task, n_tasks, _ops.half_min)
    return bad


@_kernel
def bf16_max(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = segment_task(arrays, params, task, n_tasks, _ops.bf16_max)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            merge_task(arrays, params, task, n_tasks, _ops.bf16_max)
    return bad


@_kernel
def bf16_min(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = segment_task(arrays, params, task, n_tasks, _ops.bf16_min)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            merge_task(arrays, params, task, n_tasks, _ops.bf16_min)
    return bad
