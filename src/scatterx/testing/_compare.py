"""Bit-for-bit comparison of two arrays, with a message that shows the first difference."""

from __future__ import annotations

from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]


def _native(array: Array) -> Array:
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return np.ascontiguousarray(array)


def _bits(array: Array, any_nan: bool | Array) -> Array:
    """One unsigned integer per element holding its bytes, so NaN payloads and -0.0 count.

    NaNs where ``any_nan`` is True (everywhere, for ``True``) are first replaced by one
    canonical NaN.
    """
    array = _native(array)
    if array.dtype.kind in "fcV" and np.any(any_nan):
        array = array.copy()
        array[np.isnan(array) & any_nan] = np.nan
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(array.dtype.itemsize)
    if width is not None:
        return array.view(width)
    return array.view(np.uint8).reshape(*array.shape, array.dtype.itemsize)


def first_difference(actual: Array, expected: Array, any_nan: bool | Array = False) -> str | None:
    """Describe how ``actual`` differs from ``expected`` bit for bit, or None if it does not.

    ``any_nan`` lets any NaN equal any other, everywhere (``True``) or where a boolean array
    of the result's shape is True: the payload of a NaN that arithmetic makes from two NaN
    operands is the hardware's choice (x86 keeps the first operand's, CUDA returns a
    canonical NaN). :func:`scatterx.testing.reference_with_free_nans` says where that is.

    Parameters
    ----------
    actual, expected : numpy.ndarray
        The arrays to compare.
    any_nan : bool or numpy.ndarray, optional
        Where any NaN equals any other NaN.

    Returns
    -------
    str or None
        The dtype or shape that differs, or how many elements differ and the first of them.
    """
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype} differs from the expected {expected.dtype}"
    if actual.shape != expected.shape:
        return f"shape {actual.shape} differs from the expected {expected.shape}"
    if actual.dtype.kind in "OTUS":
        same = np.array(
            [
                a == e and type(a) is type(e)
                for a, e in zip(actual.ravel().tolist(), expected.ravel().tolist(), strict=True)
            ],
            dtype=bool,
        ).reshape(actual.shape)
    else:
        a, e = _bits(actual, any_nan), _bits(expected, any_nan)
        same = a == e if a.ndim == actual.ndim else np.all(a == e, axis=-1)
    if bool(np.all(same)):
        return None
    where = tuple(int(i) for i in np.argwhere(~same)[0])
    count = int(np.size(same) - np.count_nonzero(same))
    return (
        f"{count} of {np.size(same)} elements differ; first at {where}: "
        f"got {_show(actual[where])}, expected {_show(expected[where])}"
    )


def _show(value: Any) -> str:
    """A value and, for a float, its bits: two NaNs print alike but may differ."""
    item = np.asarray(value)
    width = {2: np.uint16, 4: np.uint32, 8: np.uint64}.get(item.dtype.itemsize)
    if item.dtype.kind in "fV" and width is not None:
        return f"{value!r} (bits 0x{int(item.view(width)):0{2 * item.dtype.itemsize}x})"
    return repr(value)


def assert_bitwise_equal(actual: Array, expected: Array, any_nan: bool | Array = False) -> None:
    """Raise AssertionError unless the two arrays have equal dtype, shape and bits.

    Parameters
    ----------
    actual, expected : array_like
        The arrays to compare.
    any_nan : bool or numpy.ndarray, optional
        Where any NaN equals any other NaN, as in :func:`first_difference`.

    Examples
    --------
    >>> import numpy as np
    >>> assert_bitwise_equal(np.array([0.0]), np.array([0.0]))
    >>> assert_bitwise_equal(np.array([-0.0]), np.array([0.0]))
    Traceback (most recent call last):
    ...
    AssertionError: 1 of 1 elements differ; first at (0,): got np.float64(-0.0) (bits ...
    """
    problem = first_difference(np.asarray(actual), np.asarray(expected), any_nan)
    if problem is not None:
        raise AssertionError(problem)
