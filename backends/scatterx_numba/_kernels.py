"""The one-pass kernels (columns, owners): a parallel, disk-cached entry per reduction.

Numba caches a function only when its arguments are plain data, so the reduction cannot be
an argument: each entry point below names its own (inlined) reduction, and the shared body
lives in :mod:`scatterx_numba._tasks`. The ``prange`` must sit in the cached function
itself; the tasks share no output element, so they run in any order on any thread.
The two-pass strategies have their own entry points (:mod:`scatterx_numba._two_pass`):
inlined into these, they doubled the cold compile of one signature (3.2 s to 8.6 s).
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from . import _ops
from ._tasks import one_pass

_kernel = nb.njit(parallel=True, cache=True, nogil=True)


@_kernel
def take_new(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.take_new)
    return bad


@_kernel
def add(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.add)
    return bad


@_kernel
def mul(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.mul)
    return bad


@_kernel
def maximum(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.maximum)
    return bad


@_kernel
def minimum(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.minimum)
    return bad


@_kernel
def half_add(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.half_add)
    return bad


@_kernel
def half_mul(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.half_mul)
    return bad


@_kernel
def half_max(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.half_max)
    return bad


@_kernel
def half_min(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.half_min)
    return bad


@_kernel
def bf16_add(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.bf16_add)
    return bad


@_kernel
def bf16_mul(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.bf16_mul)
    return bad


@_kernel
def bf16_max(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.bf16_max)
    return bad


@_kernel
def bf16_min(arrays: Any, params: Any, n_tasks: int) -> Any:
    bad = np.empty(n_tasks, np.int64)
    for task in nb.prange(n_tasks):
        bad[task] = one_pass(arrays, params, task, n_tasks, _ops.bf16_min)
    return bad


#: (storage family, reduction) -> name of the kernel (in this module and in _two_pass).
#: bool is stored as uint8 0/1, where logical or is max and logical and is min; float16
#: and bfloat16 ``none`` moves bits as uint16.
NAMES: dict[tuple[str, str], str] = {
    **{(family, "none"): "take_new" for family in ("plain", "bool", "half", "bf16")},
    ("plain", "add"): "add",
    ("plain", "mul"): "mul",
    ("plain", "max"): "maximum",
    ("plain", "min"): "minimum",
    ("bool", "add"): "maximum",
    ("bool", "mul"): "minimum",
    ("bool", "max"): "maximum",
    ("bool", "min"): "minimum",
    **{
        (family, reduction): f"{family}_{reduction}"
        for family in ("half", "bf16")
        for reduction in ("add", "mul", "max", "min")
    },
}
