"""The contract's loops, word for word: the oracles every backend is compared with."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from scatterx.backend import out_of_bounds_error


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
    """Compute ScatterElements by the contract's plain loop over ``indices`` in C order.

    Deliberately slow and simple, sharing no code with any backend. It assumes a valid
    call (no argument checks) but raises IndexError for an index out of bounds.

    Parameters
    ----------
    data, indices, updates : array_like
        The arrays of the call, as :func:`scatterx.scatter_elements` takes them.
    axis : int, optional
        The axis to scatter along; a negative axis counts from the end.
    reduction : {"none", "add", "mul", "max", "min"}, optional
        How an update combines with the value it lands on.

    Returns
    -------
    numpy.ndarray
        A new array: ``data`` with every update applied.

    Examples
    --------
    >>> import numpy as np
    >>> reference_scatter_elements(np.zeros(3), np.array([2, 2]), np.array([1.0, 2.0]),
    ...                            reduction="add")
    array([0., 0., 3.])
    """
    return reference_with_free_nans(data, indices, updates, axis, reduction)[0]


def reference_with_free_nans(
    data: Any, indices: Any, updates: Any, axis: int = 0, reduction: str = "none"
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The oracle's result, and where the contract lets any NaN stand for its value.

    The second array is True where an add or mul met two NaN operands: the payload of that
    NaN (and of every NaN computed from it) is the hardware's choice (contract section 2).
    Everywhere else a NaN's bits, its sign included, are part of the answer.
    """
    data = np.asarray(data)
    indices = np.asarray(indices)
    updates = np.asarray(updates)
    kind = data.dtype.kind
    if kind == "b":
        out: np.ndarray[Any, Any] = np.not_equal(data.view(np.uint8), 0)  # any nonzero byte
        updates = np.not_equal(updates.view(np.uint8), 0)
    else:
        out = np.array(data, copy=True)
    free = np.zeros(out.shape, dtype=bool)
    arithmetic = reduction in ("add", "mul") and (kind in "fc" or data.dtype.name == "bfloat16")
    axis = axis % data.ndim
    size = data.shape[axis]
    with np.errstate(all="ignore"):
        for position in itertools.product(*(range(n) for n in indices.shape)):
            index = int(indices[position])
            if not -size <= index < size:
                msg = f"index {index} at {position} out of bounds for size {size}"
                raise IndexError(msg)
            target = list(position)
            target[axis] = index if index >= 0 else index + size
            j = tuple(target)
            old, new = out[j], updates[position]
            if arithmetic and _two_nans_meet(reduction, old, new):
                free[j] = True
            out[j] = _combine(reduction, old, new, kind)
    return out, free


def _two_nans_meet(reduction: str, old: Any, new: Any) -> bool:
    """Whether a real add or subtract of two NaNs happens in ``f(old, new)``.

    For complex numbers that is component by component: in add the real parts and the
    imaginary parts meet; in mul, the textbook formula's products meet (``ac - bd``,
    ``ad + bc``), and a product can be NaN from no NaN at all (``0 * inf``).
    """
    if not np.iscomplexobj(old):
        return bool(np.isnan(old) and np.isnan(new))
    a, b, c, d = old.real, old.imag, new.real, new.imag
    pairs = [(a, c), (b, d)] if reduction == "add" else [(a * c, b * d), (a * d, b * c)]
    return any(bool(np.isnan(x) and np.isnan(y)) for x, y in pairs)


def reference_gather_elements(data: Any, indices: Any, axis: int = 0) -> np.ndarray[Any, Any]:
    """Compute GatherElements by the contract's plain loop over ``indices`` in C order.

    ``out[i] = data[j]`` with ``j = i`` but ``j[axis] = indices[i]`` (contract.md section
    10), one element at a time. Deliberately slow and simple, sharing no code with any
    backend. It assumes a valid call (no argument checks) but raises the backends'
    IndexError for the first index out of bounds in C order. A bool is read as any
    nonzero byte, so the result holds canonical 0/1 bytes.

    Parameters
    ----------
    data, indices : array_like
        The arrays of the call, as :func:`scatterx.gather_elements` takes them.
    axis : int, optional
        The axis to gather along; a negative axis counts from the end.

    Returns
    -------
    numpy.ndarray
        A new array of the shape of ``indices`` and the dtype of ``data``.

    Raises
    ------
    IndexError
        For the first index, in C order, outside ``[-s, s-1]``, ``s = data.shape[axis]``.

    Examples
    --------
    >>> import numpy as np
    >>> reference_gather_elements(np.array([[1, 2], [3, 4]]), np.array([[0, 0], [1, 0]]), axis=1)
    array([[1, 1],
           [4, 3]])
    >>> reference_gather_elements(np.array([5.0, 6.0]), np.array([-1, 2]))
    Traceback (most recent call last):
    ...
    IndexError: index 2 at position (1,) of indices is out of bounds for axis 0 with size 2: ...
    """
    data = np.asarray(data)
    indices = np.asarray(indices)
    source = np.not_equal(data.view(np.uint8), 0) if data.dtype.kind == "b" else data
    out = np.empty(indices.shape, dtype=data.dtype)
    axis = axis % data.ndim
    size = data.shape[axis]
    for position in itertools.product(*(range(n) for n in indices.shape)):
        index = int(indices[position])
        if not -size <= index < size:
            raise out_of_bounds_error(index, position, axis, size)
        source_position = list(position)
        source_position[axis] = index if index >= 0 else index + size
        out[position] = source[tuple(source_position)]
    return out
