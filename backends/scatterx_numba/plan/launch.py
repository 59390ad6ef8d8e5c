"""What a call launches, told from its metadata alone: one plan that runs and compiles.

:func:`launch_plan` turns a call (``plan.call.describe``: metadata, never a value, and no
numba import) into a scatter's plan: the strategy, whether the kernel's tasks copy data
(fused copy), what copies it into a new output first otherwise, whether a pass checks
the bounds first, the scratch array, and the kernel's arguments;
``plan.gather_launch.gather_launch_plan`` likewise for a gather. ``_run`` and ``_gather``
execute these plans, taking every decision from them, and ``_background`` compiles each of
:func:`launches` for stand-ins of the arguments it names (``plan.call.Arg``): equal kinds
(``_runtime.kinds``), one compiled signature.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from .._views import KernelParams, Strategy
from . import call as _call
from . import gather_launch as _gather_launch
from . import strategy as _strategy
from .call import Arg, Call, Launch

_INT64 = np.dtype(np.int64)
_BYTES = np.dtype(np.uint8)
#: Below this many bytes one thread's copy of data beats a parallel launch.
PARALLEL_COPY_BYTES = 1 << 22
#: Tasks per thread of a launch of one-column units (``LaunchPlan.n_tasks``).
COLUMN_LAUNCH_TASKS_PER_THREAD = 4


class ScatterArgs(NamedTuple):
    """The arrays of a scatter kernel (``_views.KernelArrays``), as arguments."""

    out: Arg
    data: Arg
    idx: Arg
    upd: Arg
    outer_map: Arg
    inner_map: Arg


class Copy(Enum):
    """How data gets into a new output before the kernel."""

    NONE = "none"  # in place, or copied by the kernel's tasks
    NUMPY = "numpy"  # by one thread
    PASS = "pass"  # by ``kernels.passes.copy_words`` on every thread


class Scratch(NamedTuple):
    """A strategy's scratch array: 2-D, its start value (None: none), and whether it is a
    placeholder that the strategy never writes (one serves every call)."""

    arg: Arg
    fill: Any = None
    placeholder: bool = False


def copy_tasks(threads: int) -> int:
    """Tasks of the parallel copy of data into a new output."""
    return 4 * threads


def _copy_launch(call: Call, threads: int) -> Launch:
    """The parallel copy of data into a new output, as bytes: one signature for every dtype."""
    n_bytes = math.prod(call.shape) * call.dtype.itemsize
    args = (Arg(_BYTES, (n_bytes,), writeable=True), Arg(_BYTES, (n_bytes,)), copy_tasks(threads))
    return Launch("pass_kernel", ("copy_words",), args)


# ---- scatter ----------------------------------------------------------------------------


def _scratch(plan: _strategy.Plan, call: Call, kept: np.dtype[Any]) -> Scratch:
    """The strategy's scratch array, for elements stored as ``kept``.

    Owners: each task's copy of its own rows, the largest share times the outer count.
    Segments: each task's partial, which starts at the reduction's identity; for ``none``,
    each task's last positions, which start at -1 (int32 unless that could overflow: half
    the memory traffic). The start values spare the kernel a mark of which elements a
    segment reached. Rows: the target row of each index row. Binned: one row of the bins'
    positions (uint32, in the storage's bytes), the column's copy and the bins' values,
    ``plan.band`` bins (one wave's updates at most); the positions get a cache line more
    than they need: regions a round number of pages apart made some wave lengths several
    times slower (docs/backends/numba.md). Columns: none, a placeholder.
    """
    outer, size, inner = _strategy.split(call.shape, call.axis)
    n, total = plan.n_tasks, outer * size * inner
    strategy = plan.strategy
    if strategy == Strategy.OWNERS:
        return Scratch(Arg(kept, (n, outer * -(-size // n) * inner + 1), writeable=True))
    if strategy == Strategy.SEGMENTS:
        assert call.reduction is not None
        if call.reduction != "none":
            identity = _call.identity(call.family, call.reduction, call.dtype)
            return Scratch(Arg(kept, (n, total), writeable=True), identity)
        wide = math.prod(call.index_shape) > np.iinfo(np.int32).max
        return Scratch(Arg(np.dtype(np.int64 if wide else np.int32), (n, total), True), -1)
    if strategy == Strategy.ROWS:
        index_outer, rows, _ = _strategy.split(call.index_shape, call.axis)
        return Scratch(Arg(_INT64, (1, index_outer * rows), writeable=True))
    if strategy == Strategy.BINNED:
        positions = -(-(plan.band * 4 + 64) // kept.itemsize)
        return Scratch(Arg(kept, (1, positions + size + plan.band), writeable=True))
    return Scratch(Arg(kept, (1, 1), writeable=True), placeholder=True)


def _fused_copy(plan: _strategy.Plan, call: Call) -> bool:
    """Whether the kernel's tasks copy data themselves (in parallel, each its own part).

    Column tasks copy only when each owns whole contiguous slabs of the output: indices as
    long as data off the axis, bands of whole rows. Narrower bands would copy their part
    as strided reads, slower than one thread's contiguous copy before the launch.
    """
    if call.in_place or not call.data_ready or plan.strategy == Strategy.OWNERS:
        return False
    axis, shape, index_shape = call.axis, call.shape, call.index_shape
    return plan.strategy != Strategy.COLUMNS or (
        shape[:axis] == index_shape[:axis]
        and shape[axis + 1 :] == index_shape[axis + 1 :]
        and plan.band == math.prod(shape[axis + 1 :])
    )


def _copy_first(call: Call, fused: bool, threads: int) -> Copy:
    """How data gets into a new output before the kernel: on every thread where it is
    C-ordered, aligned and large (see :mod:`scatterx_numba.kernels.passes`), else by NumPy."""
    if call.in_place or fused:
        return Copy.NONE
    n_bytes = math.prod(call.shape) * call.dtype.itemsize
    if threads == 1 or n_bytes < PARALLEL_COPY_BYTES or not call.data_ready:
        return Copy.NUMPY
    return Copy.PASS


def _writes_after_bounds(plan: _strategy.Plan, fused: bool, in_place: bool) -> bool:
    """Whether the launch writes nothing into ``out`` before every index is known in bounds.

    So for segments and binned (the partials, or the bins, are merged in the last pass,
    data's copy with them) and, in place, for rows and owners (their first pass, or each
    task's write-back, comes after the checks). Columns write as they go; a copy of data
    before the launch (neither in place nor by the tasks) writes first; rows copy data in
    their first pass.
    """
    if not in_place and not fused:
        return False
    if plan.strategy in (Strategy.SEGMENTS, Strategy.BINNED):
        return True
    return in_place and plan.strategy in (Strategy.ROWS, Strategy.OWNERS)


@dataclass(frozen=True)
class LaunchPlan:
    """What one scatter launches, and how: ``_run`` executes it, in this order.

    Attributes
    ----------
    strategy
        The tasks of the kernel (``_strategy.plan``).
    bounds_first
        A pass checks every index first (``kernels.passes.index_range``): the call writes into
        the caller's ``out``, and the kernel would write there before its checks. Not for
        columns, whose kernel checks them in a first pass of its own
        (``params.check_first``): one launch, and the indices read there come again in
        the tasks that write.
    copy_first
        How data gets into a new output before the kernel (not when ``fused_copy``).
    fused_copy
        The kernel's tasks copy data into the output themselves.
    kernel
        ``_runtime.kernel``'s ``(strategy, family, reduction)``.
    arrays, scratch, params
        The kernel's arrays as arguments, its scratch array and its scalars.
    rows_open
        The shapes leave whole rows open: constant index rows (only their values tell)
        run ``launch_plan(call, threads, constant_rows=True)`` instead.
    fallback
        Whole rows: what runs when a row turns out not to be constant (columns, on the
        output that already holds data, its bounds checked first unless they were).
    """

    call: Call
    threads: int
    strategy: _strategy.Plan
    bounds_first: bool
    copy_first: Copy
    fused_copy: bool
    kernel: tuple[Strategy, str, str]
    arrays: ScatterArgs
    scratch: Scratch
    params: KernelParams
    rows_open: bool
    fallback: LaunchPlan | None

    @property
    def launches(self) -> tuple[Launch, ...]:
        """This plan's launches, in order (not its fallback's)."""
        found = [_call.bounds_launch(self.call, self.threads)] if self.bounds_first else []
        if self.copy_first is Copy.PASS:
            found.append(_copy_launch(self.call, self.threads))
        args = (self.arrays, self.scratch.arg, self.params, self.n_tasks)
        return (*found, Launch("kernel", self.kernel, args))

    @property
    def n_tasks(self) -> int:
        """The kernel's ``prange`` iterations: the strategy's tasks, except that column
        units that are single columns go a share of them to each of a few tasks per thread
        (a task costs more than a column of a few updates: last-axis-sparse)."""
        plan = self.strategy
        if plan.strategy != Strategy.COLUMNS or plan.band > 1:
            return plan.n_tasks
        return min(plan.n_tasks, COLUMN_LAUNCH_TASKS_PER_THREAD * self.threads)


# No lock: a pure function of its arguments (and of plan.strategy's constants, see cache_clear),
# so two threads that both miss make equal plans, and either is kept.
@lru_cache(maxsize=512)
def launch_plan(call: Call, threads: int, constant_rows: bool = False) -> LaunchPlan:
    """What the scatter ``call`` launches on ``threads`` of numba's threads, its index
    rows being constant or not (asked of the values only where ``rows_open`` says)."""
    assert call.reduction is not None
    assert math.prod(call.index_shape) > 0
    kept = _call.storage(call.family, call.dtype, call.reduction)
    choose = _chooser(call, kept, threads)
    plan = choose(constant_rows)
    fused = _fused_copy(plan, call)
    bounds = call.into_out and not _writes_after_bounds(plan, fused, call.in_place)
    fallback = None
    if plan.strategy == Strategy.ROWS:
        fallback = _columns_after_rows(call, threads, choose(False), kept, checked=bounds)
    copy = _copy_first(call, fused, threads)
    # Columns check in the kernel's own first pass, not in a launch of their own, where
    # nothing writes into out before the kernel (no copy of data into it first).
    check_first = bounds and plan.strategy == Strategy.COLUMNS and copy is Copy.NONE
    return _scatter_plan(
        call,
        threads,
        plan,
        kept,
        fused,
        bounds and not check_first,
        copy,
        fallback,
        rows_open=choose(True) != choose(False),
        checked=bounds,
        check_first=check_first,
    )


def _chooser(call: Call, kept: np.dtype[Any], threads: int) -> Callable[[bool], _strategy.Plan]:
    """``constant_rows -> _strategy.plan(...)`` for ``call``, its elements stored as ``kept``."""
    assert call.reduction is not None
    regroupable = _call.regroupable(call.family, call.reduction, call.dtype)

    def choose(constant_rows: bool) -> _strategy.Plan:
        return _strategy.plan(
            call.shape,
            call.index_shape,
            call.axis,
            kept.itemsize,
            threads,
            regroupable=regroupable,
            constant_rows=constant_rows,
        )

    return choose


def _columns_after_rows(
    call: Call, threads: int, plan: _strategy.Plan, kept: np.dtype[Any], *, checked: bool
) -> LaunchPlan:
    """The columns plan run after a whole-row launch met a row that is not constant: the
    output holds data's copy already, and the indices past that row are not checked yet,
    so they are first, unless the pass before the whole rows checked them all."""
    bounds = call.into_out and not checked
    return _scatter_plan(
        call,
        threads,
        plan,
        kept,
        False,
        bounds,
        Copy.NONE,
        None,
        rows_open=False,
        checked=checked or bounds,
    )


def _scatter_plan(
    call: Call,
    threads: int,
    plan: _strategy.Plan,
    kept: np.dtype[Any],
    fused: bool,
    bounds: bool,
    copy: Copy,
    fallback: LaunchPlan | None,
    *,
    rows_open: bool,
    checked: bool,
    check_first: bool = False,
) -> LaunchPlan:
    """The plan's arrays and scalars; ``checked``: every index is known in bounds before
    the kernel's column tasks run (the pass of ``bounds``, one before, or the kernel's own
    first pass where ``check_first``), so they skip it."""
    assert call.reduction is not None
    shape, index_shape, axis = call.shape, call.index_shape, call.axis
    three_d, index_three_d = _strategy.split(shape, axis), _strategy.split(index_shape, axis)
    arrays = ScatterArgs(
        out=Arg(kept, three_d, writeable=True),
        data=Arg(kept, three_d),  # data, or out itself read-only
        idx=Arg(call.index_dtype, index_three_d),
        upd=Arg(kept, index_three_d),
        outer_map=Arg(_INT64, index_three_d[:1]),
        inner_map=Arg(_INT64, index_three_d[2:]),
    )
    inner_same = shape[axis + 1 :] == index_shape[axis + 1 :]
    return LaunchPlan(
        call,
        threads,
        plan,
        bounds,
        copy,
        fused,
        (plan.strategy, call.family, call.reduction),
        arrays,
        _scratch(plan, call, kept),
        KernelParams(plan.band, inner_same, fused, checked, check_first),
        rows_open,
        fallback,
    )


def launches(call: Call, threads: int) -> tuple[Launch, ...]:
    """Every launch ``call`` may make on ``threads``, each once: for a scatter whose shapes
    leave whole rows open, those of both plans (only the index values tell which runs),
    and the columns launch that follows rows that turn out not to be constant."""
    if not math.prod(call.index_shape):
        return ()
    if call.reduction is None:
        return _gather_launch.gather_launch_plan(call, threads).launches
    plans = [launch_plan(call, threads)]
    if plans[0].rows_open:
        plans.append(launch_plan(call, threads, constant_rows=True))
    found: dict[Launch, None] = {}
    for plan in plans:
        step: LaunchPlan | None = plan
        while step is not None:
            found.update(dict.fromkeys(step.launches))
            step = step.fallback
    return tuple(found)


def cache_clear() -> None:
    """Forget the plans made so far: they read ``plan.strategy``'s constants once per kind of call,
    so a change of those (a test's) takes effect only after this."""
    launch_plan.cache_clear()
    _gather_launch.gather_launch_plan.cache_clear()
