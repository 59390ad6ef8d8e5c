"""What a call checks of its values: every index in bounds (the IndexError), rows constant."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from scatterx.backend import Request, out_of_bounds_error

from . import _runtime
from .plan import call as _call

Array = np.ndarray[Any, Any]


def raise_first_bad(bad: Array, request: Request) -> None:
    """Raise the contract's IndexError for the first out-of-bounds index in C order, given
    each task's -1 or position of its first bad index."""
    if max(bad.tolist(), default=-1) < 0:  # every task: -1 (no ufunc: see _views.maps)
        return
    found = bad[bad >= 0]
    if found.size:
        position = tuple(int(p) for p in np.unravel_index(int(found.min()), request.index_shape))
        value = int(request.indices[position])
        raise out_of_bounds_error(value, position, request.axis, request.axis_size)


def check_before_writing(idx: Array, request: Request) -> None:
    """Raise the contract's IndexError for the first bad index of ``idx`` (``indices`` in C
    order, contiguous) before anything is written: one parallel pass over the indices."""
    flat = idx.reshape(-1)
    n_tasks = _call.bounds_tasks(flat.size, _runtime.num_threads())
    found = _runtime.launch(_runtime.pass_kernel("index_range"), flat, n_tasks)
    size = request.axis_size
    if int(found[:, 0].min()) < -size or int(found[:, 1].max()) >= size:
        raise_first_bad_in_c_order(flat, request)


def raise_first_bad_in_c_order(flat: Array, request: Request) -> None:
    """Raise the contract's IndexError for the first bad index of ``flat``: ``indices`` in
    C order, flattened."""
    size = request.axis_size
    raise_first_bad(np.flatnonzero((flat < -size) | (flat >= size))[:1], request)


def constant_rows(rows: Iterable[Array]) -> bool:
    """Whether each of ``rows`` holds one value (an embedding gradient's index rows)."""
    for row in rows:
        flat = row.reshape(-1)
        # The ends of a row first: they turn random rows away without a full compare.
        if flat.size < 2 or flat[0] != flat[-1] or not bool((flat == flat[0]).all()):
            return False
    return True
