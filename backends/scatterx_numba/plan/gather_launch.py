"""What a gather launches, told from its metadata alone: the gather's half of ``plan.launch``.

The call is ``plan.call.describe``'s; :mod:`scatterx_numba.plan.launch` has the scatter's
half, and every launch of a call.

:func:`gather_launch_plan` turns a gather into its plan: the bounds pass where it writes
into the caller's ``out``, the words its elements move as, and the kernel's arguments;
``_gather`` executes it, and ``_background`` compiles its launches.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from .._views import GatherParams
from . import strategy as _strategy
from .call import Arg, Call, Launch, bounds_launch

_INT64 = np.dtype(np.int64)


class GatherArgs(NamedTuple):
    """The arrays of a gather kernel, as arguments."""

    out: Arg
    data: Arg  # strided where the gather reads data where it lies
    idx: Arg
    outer_map: Arg
    inner_map: Arg


@dataclass(frozen=True)
class GatherLaunchPlan:
    """What one gather launches: ``_gather`` executes it."""

    bounds: Launch | None  # the pass over the indices before writing into ``out``
    word: np.dtype[Any]  # the unsigned dtype elements move as (``_strategy.words``)
    width: int  # words per element
    arrays: GatherArgs
    params: GatherParams
    n_tasks: int

    @property
    def launches(self) -> tuple[Launch, ...]:
        args = (self.arrays, self.params, self.n_tasks)
        kernel = Launch("gather_kernel", (self.width,), args)
        return (kernel,) if self.bounds is None else (self.bounds, kernel)


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
    arrays = GatherArgs(
        Arg(word, (outer, rows, inner * width), writeable=True),
        source,
        Arg(call.index_dtype, (outer, rows, inner)),
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
    bounds = bounds_launch(call, threads) if call.into_out else None
    return GatherLaunchPlan(bounds, word, width, arrays, params, n_tasks)
