"""The whole-row (embedding) kernels: a parallel, disk-cached entry per reduction.

As in :mod:`scatterx_numba._kernels`, each entry names its own reduction. The first pass
finds the target row of each task's share of the index rows; the second, run only when
the first found every row constant and in bounds, applies the update rows that land in
each task's range of output rows. Rows and segments have separate modules: together in
one kernel they made the cold compile of one signature 5.5 s (rows alone 3.3 s).
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from . import _ops
from ._tasks import all_in_bounds, apply_row_task, row_target_task

_kernel = nb.njit(parallel=True, cache=True, nogil=True)


@_kernel
def take_new(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.take_new)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.take_new)
    return bad


@_kernel
def add(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.add)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.add)
    return bad


@_kernel
def mul(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.mul)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.mul)
    return bad


@_kernel
def maximum(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.maximum)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.maximum)
    return bad


@_kernel
def minimum(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.minimum)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.minimum)
    return bad


@_kernel
def half_add(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.half_add)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.half_add)
    return bad


@_kernel
def half_mul(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.half_mul)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.half_mul)
    return bad


@_kernel
def half_max(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.half_max)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.half_max)
    return bad


@_kernel
def half_min(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.half_min)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.half_min)
    return bad


@_kernel
def bf16_add(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.bf16_add)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.bf16_add)
    return bad


@_kernel
def bf16_mul(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.bf16_mul)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.bf16_mul)
    return bad


@_kernel
def bf16_max(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.bf16_max)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.bf16_max)
    return bad


@_kernel
def bf16_min(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = row_target_task(arrays, params, task, n_tasks, _ops.bf16_min)
    if all_in_bounds(bad):
        for task in nb.prange(n_tasks):
            apply_row_task(arrays, params, task, n_tasks, _ops.bf16_min)
    return bad
