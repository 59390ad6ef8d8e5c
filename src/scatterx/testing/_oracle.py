"""The contract's loop, word for word: the oracle every backend is compared with."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np


def _combine(reduction: str, old: Any, new: Any, kind: str) -> Any:
    """``f(out[j], updates[i])`` of contract.md section 2, one scalar at a time."""
    if reduction == "none":
        return new
    if kind == "b":  # bool: add and max are logical or, mul and min logical and
        return (old or new) if reduction in ("add", "max") else (old and new)
    if kind in "OTUS":  # strings: add concatenates, max/min compare code points
        if reduction == "add":
            return old + new
        if reduction == "max":
            return new if new > old else old
        return new if new < old else old
    # Numbers: NumPy's scalar operators round to the dtype after every step (float16 and
    # bfloat16 too) and wrap integers. Complex products are the textbook formula
    # (ar*br - ai*bi, ar*bi + ai*br), each step rounded, no fused multiply-add; NumPy's
    # scalar `*` computes exactly that (tests/test_oracle.py checks it).
    if reduction == "add":
        return old + new
    if reduction == "mul":
        return old * new
    # max/min propagate NaN exactly as np.maximum/np.minimum: a NaN first operand wins,
    # and of two equal values (0.0 and -0.0) the second is kept.
    return (np.maximum if reduction == "max" else np.minimum)(old, new)


def reference_scatter_elements(
    data: Any, indices: Any, updates: Any, axis: int = 0, reduction: str = "none"
) -> np.ndarray[Any, Any]:
    """ScatterElements by the contract's plain loop over ``indices`` in C order.

    Deliberately slow and simple, sharing no code with any backend. It assumes a valid
    call (no argument checks) but raises IndexError for an index out of bounds.

    Examples
    --------
    >>> import numpy as np
    >>> reference_scatter_elements(np.zeros(3), np.array([2, 2]), np.array([1.0, 2.0]),
    ...                            reduction="add")
    array([0., 0., 3.])
    """
    data = np.asarray(data)
    indices = np.asarray(indices)
    updates = np.asarray(updates)
    out: np.ndarray[Any, Any] = np.array(data, copy=True)
    axis = axis % data.ndim
    size = data.shape[axis]
    kind = data.dtype.kind
    with np.errstate(all="ignore"):
        for position in itertools.product(*(range(n) for n in indices.shape)):
            index = int(indices[position])
            if not -size <= index < size:
                msg = f"index {index} at {position} out of bounds for size {size}"
                raise IndexError(msg)
            target = list(position)
            target[axis] = index if index >= 0 else index + size
            j = tuple(target)
            out[j] = _combine(reduction, out[j], updates[position], kind)
    return out
