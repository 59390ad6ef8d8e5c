"""Exceptions of scatterx and the index-bounds error every backend raises alike."""

from __future__ import annotations

from typing import Any

import numpy as np


class BackendError(RuntimeError):
    """A named backend cannot run the call; the message says why."""


def out_of_bounds_error(value: int, position: tuple[int, ...], axis: int, size: int) -> IndexError:
    """Build the contract's IndexError for the first bad index in C order.

    Every backend raises exactly this message, whether it checks bounds before or
    inside its kernel.
    """
    msg = (
        f"index {value} at position {position} of indices is out of bounds "
        f"for axis {axis} with size {size}: valid indices are in [{-size}, {size - 1}]"
    )
    return IndexError(msg)


_SMALL = 64


def check_bounds_numpy(indices: np.ndarray[Any, Any], axis: int, size: int) -> bool:
    """Raise the contract's IndexError if any index is outside ``[-size, size-1]``.

    Vectorised: two reductions over ``indices`` in the common case, a third pass only
    when something is out of bounds. Returns whether any index is negative, so the caller
    can skip the wrap-around pass when none is.
    """
    if indices.size == 0:
        return False
    if indices.size <= _SMALL:
        # For a handful of indices, min and max of a list cost a fifth of two reductions.
        values = indices.ravel().tolist()
        low, high = min(values), max(values)
    else:
        low, high = int(indices.min()), int(indices.max())
    if low < -size or high >= size:
        bad = (indices < -size) | (indices >= size)
        flat = int(np.argmax(bad))
        position = tuple(int(p) for p in np.unravel_index(flat, indices.shape))
        raise out_of_bounds_error(int(indices[position]), position, axis, size)
    return bool(low < 0)
