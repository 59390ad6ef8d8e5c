"""Work claimed at run time inside one ``prange``: atomic counters, and a polite wait.

numba's threading layers hand each thread a fixed share of a ``prange`` (OpenMP's static
schedule), and every ``prange`` ends when its slowest thread does. On a loaded machine a
thread is descheduled for milliseconds at a time, and each parallel region waits for it.
A kernel that first checks every index and then writes would take two regions, and wait
twice. Claiming shares from a counter instead lets one region do both, on any thread that
runs: a task claims check shares until none is left, waits only for shares that another
task has claimed and is working on, then claims write shares. No task ever waits for work
that nobody has claimed, so the tasks may run on any number of threads, one included,
in any order: no deadlock.

Counters are int64 elements of a 1-D C-ordered array, read and written with sequentially
consistent atomics: whatever a task wrote before it counted a share done is seen by every
task that saw the count.
"""

from __future__ import annotations

import sys
from typing import Any

import numba as nb
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba.core import cgutils, types
from numba.extending import intrinsic

_ORDER = "seq_cst"
#: Looks at a counter before a waiting task yields its core: tens of microseconds, less
#: than a share of work.
SPIN_LOOKS = 1 << 12
#: What a waiting task calls to hand its core to another thread (a descheduled task's):
#: POSIX's ``sched_yield``, found among the process's symbols when the code is loaded
#: (from numba's cache too: it names the symbol, not an address). Elsewhere the task
#: only spins.
_YIELD = None if sys.platform == "win32" else "sched_yield"


def item_pointer(context: Any, builder: Any, signature: Any, args: Any) -> Any:
    """In an intrinsic's codegen, the address of ``array[positions]``: ``array`` is its
    first argument, the next ``array.ndim`` arguments (integers of any type) the positions
    (``counters[position]`` here, ``kernels.tasks.prefetch``'s element of a 2-D array)."""
    array_type = signature.args[0]
    n = array_type.ndim
    array = context.make_array(array_type)(context, builder, args[0])
    positions = [
        context.cast(builder, value, kind, types.intp)
        for value, kind in zip(args[1 : 1 + n], signature.args[1 : 1 + n], strict=True)
    ]
    return cgutils.get_item_pointer(  # type: ignore[no-untyped-call]
        context, builder, array_type, array, positions
    )


def _counters_typing(counters: Any) -> bool:
    return (
        isinstance(counters, types.Array)
        and counters.dtype == types.int64
        and counters.ndim == 1
        and counters.layout == "C"
        and counters.mutable
    )


def _fetch_add_typing(typingctx: Any, counters: Any, position: Any, value: Any) -> Any:
    """``counters[position] += value``, atomically; returns the value before."""
    if not _counters_typing(counters) or not isinstance(position, types.Integer):
        return None
    if not isinstance(value, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        pointer = item_pointer(context, builder, signature, args)
        amount = context.cast(builder, args[2], signature.args[2], types.int64)
        return builder.atomic_rmw("add", pointer, amount, _ORDER)

    return types.int64(counters, position, value), codegen


def _load_typing(typingctx: Any, counters: Any, position: Any) -> Any:
    """``counters[position]``, read atomically."""
    if not _counters_typing(counters) or not isinstance(position, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.load_atomic(item_pointer(context, builder, signature, args), _ORDER, 8)

    return types.int64(counters, position), codegen


def _yield_typing(typingctx: Any) -> Any:
    """Hand this thread's core to another thread that is ready to run."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        if _YIELD is not None:
            function_type = ir.FunctionType(ir.IntType(32), [])
            module = builder.module
            function = cgutils.get_or_insert_function(  # type: ignore[no-untyped-call]
                module, function_type, _YIELD
            )
            builder.call(function, [])
        return context.get_dummy_value()

    return types.none(), codegen


# Typed as Any: they are called from compiled code only, never from Python.
fetch_add: Any = intrinsic(_fetch_add_typing)
load: Any = intrinsic(_load_typing)
yield_thread: Any = intrinsic(_yield_typing)


@nb.njit(cache=False)
def claim(counters: Any, position: int, count: int) -> int:
    """The next of ``count`` shares counted at ``counters[position]``, or -1 if none is
    left."""
    share = fetch_add(counters, position, 1)
    return share if share < count else -1


@nb.njit(cache=False)
def wait_until(counters: Any, position: int, count: int) -> None:
    """Wait until ``counters[position]`` reaches ``count``: spinning first (the share
    waited for is being worked on, and a yield to another process would cost a time
    slice), then yielding the core on every look (its task was descheduled)."""
    looks = 0
    while load(counters, position) < count:
        looks += 1
        if looks > SPIN_LOOKS:
            yield_thread()


@nb.njit(cache=False)
def counters(count: int, start: int = 0) -> Any:
    """``count`` int64 counters at ``start``; out of line: in a parallel kernel, NumPy's
    fill would be a parallel region of its own."""
    found = np.empty(count, np.int64)
    for k in range(count):
        found[k] = start
    return found
