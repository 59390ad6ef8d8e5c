"""What a gather launches, told from its metadata alone: the gather's half of ``plan.launch``.

The call is ``plan.call.describe``'s; :mod:`scatterx_numba.plan.launch` has the scatter's
half, and every launch of a call.

:func:`gather_launch_plan` turns a gather into its plan: whether its one launch checks
every index before writing (into the caller's ``out``), the words its elements move as,
and the kernel's arguments; ``_gather`` executes it, and ``_background`` compiles it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from .._views import GatherParams
from . import strategy as _strategy
from .call import Arg, Call, Launch

_INT64 = np.dtype(np.int64)


class GatherArgs(NamedTuple):
    """The arrays of a gather kernel, as arguments."""

    out: Arg
    data: Arg  # strided where the gather reads data where it lies
    idx: Arg  # strided where it reads indices where they lie, too
    outer_map: Arg
    inner_map: Arg


@dataclass(frozen=True)
class GatherLaunchPlan:
    """What one gather launches: ``_gather`` executes it."""

    #: Every index checked before the first write (into the caller's ``out``): 0 not, 1 in
    #: memory order, 2 row by row, noting which rows hold one value (constant rows).
    check: int
    word: np.dtype[Any]  # the unsigned dtype elements move as (``_strategy.words``)
    width: int  # words per element
    arrays: GatherArgs
    flat: Arg  # the indices in their memory order, 1-D: what the check reads
    params: GatherParams
    n_tasks: int

    @property
    def launches(self) -> tuple[Launch, ...]:
        args = (self.arrays, self.flat, self.params, self.check, self.n_tasks)
        return (Launch("gather_kernel", (self.width,), args),)


# No lock: a pure function of its arguments, as plan.launch.launch_plan is.
@lru_cache(maxsize=512)
def gather_launch_plan(call: Call, threads: int, constant_rows: bool = False) -> GatherLaunchPlan:
    """What the gather ``call`` launches on ``threads``, its index rows constant or not."""
    word, width = _strategy.words(call.dtype)
    outer, rows, inner = _strategy.split(call.index_shape, call.axis)
    data_outer, size, data_inner = _strategy.split(call.shape, call.axis)
    if call.source_flags is None:
        source = Arg(word, (data_outer, size, data_inner * width))
    else:
        source = Arg(word, (data_outer, size, data_inner), flags=call.source_flags)
    index = (outer, rows, inner)
    arrays = GatherArgs(
        Arg(word, (outer, rows, inner * width), writeable=True),
        source,
        Arg(call.index_dtype, index, flags=call.index_flags),
        Arg(_INT64, (outer,)),
        Arg(_INT64, (inner,)),
    )
    params, n_tasks = _strategy.gather_plan(
        call.shape,
        call.index_shape,
        call.axis,
        call.dtype.itemsize,
        threads,
        constant_rows=constant_rows,
    )
    flat = Arg(call.index_dtype, (outer * rows * inner,))
    check = (2 if constant_rows else 1) if call.into_out else 0
    return GatherLaunchPlan(check, word, width, arrays, flat, params, n_tasks)
