"""The compiled kernels: one parallel, disk-cached entry point per reduction function.

Numba caches a function only when its arguments are plain data, so the reduction cannot be
an argument: each entry point below names its own (inlined) reduction, and the shared body
lives in :mod:`scatterx_numba._tasks`. The ``prange`` must sit in the cached function
itself; the tasks share no output element, so they run in any order on any thread.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from . import _ops
from ._tasks import run_task

_kernel = nb.njit(parallel=True, cache=True, nogil=True)


@_kernel
def take_new(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.take_new)
    return bad


@_kernel
def add(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.add)
    return bad


@_kernel
def mul(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.mul)
    return bad


@_kernel
def maximum(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.maximum)
    return bad


@_kernel
def minimum(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.minimum)
    return bad


@_kernel
def half_add(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.half_add)
    return bad


@_kernel
def half_mul(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.half_mul)
    return bad


@_kernel
def half_max(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.half_max)
    return bad


@_kernel
def half_min(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.half_min)
    return bad


@_kernel
def bf16_add(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.bf16_add)
    return bad


@_kernel
def bf16_mul(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.bf16_mul)
    return bad


@_kernel
def bf16_max(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.bf16_max)
    return bad


@_kernel
def bf16_min(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = run_task(arrays, params, task, _ops.bf16_min)
    return bad


#: (storage family, reduction) -> kernel. bool is stored as uint8 0/1, where logical or
#: is max and logical and is min; float16 and bfloat16 ``none`` moves bits as uint16.
KERNELS: dict[tuple[str, str], Any] = {
    **{(family, "none"): take_new for family in ("plain", "bool", "half", "bf16")},
    ("plain", "add"): add,
    ("plain", "mul"): mul,
    ("plain", "max"): maximum,
    ("plain", "min"): minimum,
    ("bool", "add"): maximum,
    ("bool", "mul"): minimum,
    ("bool", "max"): maximum,
    ("bool", "min"): minimum,
    ("half", "add"): half_add,
    ("half", "mul"): half_mul,
    ("half", "max"): half_max,
    ("half", "min"): half_min,
    ("bf16", "add"): bf16_add,
    ("bf16", "mul"): bf16_mul,
    ("bf16", "max"): bf16_max,
    ("bf16", "min"): bf16_min,
}
