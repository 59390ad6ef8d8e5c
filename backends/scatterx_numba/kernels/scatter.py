"""The parallel kernels: one template, compiled per strategy and reduction, disk-cached.

A kernel runs the first pass of its strategy on every task in one ``prange``; a
two-pass strategy runs its second pass in the same ``prange``, once every first-pass task
found its indices in bounds: the tasks of each pass are claimed at run time
(:mod:`scatterx_numba.kernels.claims`). The columns kernel, writing into the caller's ``out``,
first checks every index (``KernelParams.check_first``) likewise, in its one ``prange``.
Each ``prange`` compiles to a function of its own that links its tasks' code again: one
per kernel keeps a cold compile short (a third less than one per pass). In place, a
column task asks its band's lines into cache before its updates come (``tasks._warm_band``).
The binned strategy runs both passes once per wave of updates, in that same ``prange``.
The ``prange`` must sit in the cached function itself; the tasks of a pass share no
output element, so they run in any order on any thread.

How the template is specialised with numba's disk cache (``cache=True``) still working:
:func:`scatter_kernel` makes one closure per (strategy, reduction) whose free variables
are plain data: the names of its passes' tasks and of its reduction, and whether it has a
second pass. numba keys a closure's cache entries on a hash of those values, so each
closure finds its own code in the next process, and two reductions never share an entry.
While compiling, numba types them as literals: :func:`run_task` picks each pass's task by
name, the tasks name the reduction to :func:`scatterx_numba.kernels.ops.fold`, which picks its
function, and the second pass is pruned from one-pass kernels before it is typed, so each
kernel compiles only the code it runs.

What does not work, and why the reduction travels as a name: a compiled function passed
as a value (an argument, a closure variable, an element of a tuple) is compiled in as its
address in this process, and numba refuses to cache such code; as an argument or closure
variable it is also keyed by an identity that changes with every process. A
``numba.literally`` argument costs a failed compile attempt on every call.

numba stamps a kernel's cache entries with this file's time and size alone: after a
change to a task's module (``tasks``, ``rows``, ``ops``, ...) a process would load the code
of the old task from a warm cache. Such a change comes with a change here (as the column
units did, their 2-D views and prefetches of one-column data, the owners' plain copies
of their rows, the binned waves' split, ``binned.BINNED_COST_PERCENT``, and the whole-row
tasks' updates indexed in 2-D), or with a cold cache.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numba as nb
import numpy as np
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import overload

from .._views import KernelArrays, KernelParams, Strategy
from . import ops
from .binned import apply_bins_task, bin_task
from .claims import claim, counters, fetch_add, wait_until
from .rows import apply_task, target_task
from .segments import fold_task, last_position_task, merge_last_task, merge_task
from .tasks import all_in_bounds, column_task, first_bad_index, owner_task, wave_found

_kernel = nb.njit(parallel=True, cache=True, nogil=True)
#: Indices per share of the columns kernel's check of its indices.
CHECK_INDICES = 1 << 16

#: The tasks of each strategy's passes; ``none`` on segments keeps the last position of
#: each target instead of folding values (the last update wins). A two-pass kernel runs
#: the second only when every task of the first found its indices in bounds.
_PASSES: dict[tuple[Strategy, bool], tuple[Any, ...]] = {
    (Strategy.COLUMNS, False): (column_task,),
    (Strategy.OWNERS, False): (owner_task,),
    (Strategy.ROWS, False): (target_task, apply_task),
    (Strategy.SEGMENTS, False): (fold_task, merge_task),
    (Strategy.SEGMENTS, True): (last_position_task, merge_last_task),
    (Strategy.BINNED, False): (bin_task, apply_bins_task),
}
_TASKS = {task.__name__: task for tasks in _PASSES.values() for task in tasks}


def run_task(name: str, op: str, arrays: Any, scratch: Any, params: Any, task: int, n: int) -> Any:
    """Run task ``task`` of ``n`` of the pass whose task is ``name``, with reduction ``op``.

    Compiled code only: ``name`` and ``op`` must be literals.
    """
    raise NotImplementedError


@overload(run_task, prefer_literal=True, inline="always")
def _run_task_typing(
    name: Any, op: Any, arrays: Any, scratch: Any, params: Any, task: Any, n: Any
) -> Any:
    if not isinstance(name, types.StringLiteral) or not isinstance(op, types.StringLiteral):
        msg = f"run_task needs a literal task name and reduction; got {name}, {op}"
        raise TypingError(msg)
    body = _TASKS[name.literal_value]

    def run(name: Any, op: Any, arrays: Any, scratch: Any, params: Any, task: Any, n: Any) -> Any:
        return body(arrays, scratch, params, task, n, op)

    return run


# Made once per process: _runtime.kernel calls it under _runtime's lock (a second kernel
# for one key would load its code again, and be another identity to launch).
@cache
def _specialise(strategy: int, op: str) -> Any:
    """The kernel of a strategy and reduction; its free variables are its cache key."""
    last_positions = strategy == Strategy.SEGMENTS and op == "take_new"
    names = [task.__name__ for task in _PASSES[Strategy(strategy), last_positions]]
    first, second, two_pass = names[0], names[-1], len(names) == 2
    columns, binned = strategy == Strategy.COLUMNS, strategy == Strategy.BINNED

    def scatter(array_tuple: Any, scratch: Any, param_tuple: Any, n_tasks: int) -> Any:
        arrays, params = KernelArrays(*array_tuple), KernelParams(*param_tuple)
        if two_pass:  # pruned from one-pass kernels
            # Both passes in one parallel region, tasks claimed at run time (see kernels.claims):
            # a region per pass would wait for a descheduled thread once more, and each
            # compiles to a function of its own (a third of the kernel's compile time).
            # Binned runs both passes once per wave of params.band updates (wave w: tasks
            # w * n_tasks + 0 .. n_tasks - 1), each pass awaited before the next begins;
            # a wave that meets a bad index ends the call. The others run one wave.
            n_waves = -(-arrays.idx.shape[1] // params.band) if binned else 1
            found = np.empty(n_waves * n_tasks, np.int64)  # each wave's own first pass
            claims = counters(4 * n_waves)
            for _task in nb.prange(n_tasks):
                for wave in range(n_waves):
                    at, c = wave * n_tasks, 4 * wave
                    p = claim(claims, c, n_tasks)
                    while p >= 0:
                        found[at + p] = run_task(
                            first, op, arrays, scratch, params, at + p, n_tasks
                        )
                        fetch_add(claims, c + 1, 1)
                        p = claim(claims, c, n_tasks)
                    wait_until(claims, c + 1, n_tasks)
                    if not all_in_bounds(found[at : at + n_tasks]):
                        break
                    p = claim(claims, c + 2, n_tasks)
                    while p >= 0:
                        run_task(second, op, arrays, scratch, params, at + p, n_tasks)
                        fetch_add(claims, c + 3, 1)
                        p = claim(claims, c + 2, n_tasks)
                    wait_until(claims, c + 3, n_tasks)
            return wave_found(found, n_tasks)
        bad = np.empty(n_tasks, np.int64)
        for task in nb.prange(n_tasks):
            bad[task] = run_task(first, op, arrays, scratch, params, task, n_tasks)
        return bad

    def scatter_columns(array_tuple: Any, scratch: Any, param_tuple: Any, n_tasks: int) -> Any:
        # One parallel region, whether or not the kernel checks every index first (into
        # the caller's out): a region of its own would wait for a descheduled thread once
        # more, and compile the tasks once more. With the check, every index is checked
        # before the first write, in shares claimed at run time (see kernels.claims); without
        # it, each task runs its own share.
        arrays, params = KernelArrays(*array_tuple), KernelParams(*param_tuple)
        check = params.check_first
        n_checks = max(1, -(-arrays.idx.size // CHECK_INDICES)) if check else 0
        # Filled out of line: in the kernel, np.zeros and bad[:] = -1 would be parallel
        # regions of their own.
        checks, claims = np.empty(n_checks, np.int64), counters(3)
        bad = counters(n_tasks, -1) if check else np.empty(n_tasks, np.int64)
        for task in nb.prange(n_tasks):
            if check:
                c = claim(claims, 0, n_checks)
                while c >= 0:
                    checks[c] = first_bad_index(arrays.idx, arrays.out.shape[1], c, n_checks)
                    fetch_add(claims, 1, 1)
                    c = claim(claims, 0, n_checks)
                wait_until(claims, 1, n_checks)
            if not check or all_in_bounds(checks):
                # int64 both ways: the prange index is unsigned in the parallel region.
                p: Any = claim(claims, 2, n_tasks) if check else np.int64(task)
                while p >= 0:
                    bad[p] = run_task(first, op, arrays, scratch, params, p, n_tasks)
                    p = claim(claims, 2, n_tasks) if check else np.int64(-1)
        return checks if check and not all_in_bounds(checks) else bad

    # A name of its own: its own cache index and environment. Sharing one qualified name,
    # the specialisations' cached code, loaded in a process that had not compiled it,
    # could box its result with no dtype ("NRT_adapt_ndarray_to_python: descr is NULL"):
    # a cold run of two pytest workers showed it.
    template = scatter_columns if columns else scatter
    template.__qualname__ = f"scatter_{strategy}_{op}"
    return _kernel(template)


def scatter_kernel(strategy: Strategy, family: str, reduction: str) -> Any:
    """The kernel of ``strategy`` for a storage family and reduction.

    ``kernel(arrays, scratch, params, n_tasks)`` takes the fields of a ``KernelArrays`` and
    of a ``KernelParams`` as plain tuples (numba's dispatcher types a plain tuple faster
    than a named one, which a small call feels) and names them again inside; ``scratch``
    is the strategy's own 2-D array (see ``plan.launch._scratch``). It returns each
    first-pass task's result: -1, or the position of the first bad index it met (or
    ``_views.NOT_CONSTANT``, rows only).
    Families whose reductions are one function share its kernel (bool ``add`` is uint8
    ``max``), and so its compiled signatures.
    """
    return _specialise(int(strategy), ops.op_name(family, reduction))
