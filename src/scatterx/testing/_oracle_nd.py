"""The contract's ScatterND and GatherND loops (section 14), one index row at a time."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from scatterx.backend import out_of_bounds_error

from ._oracle import _combine, _two_nans_meet

Array = np.ndarray[Any, Any]


def _positions(shape: tuple[int, ...]) -> itertools.product[tuple[int, ...]]:
    """Every position of ``shape`` in C order (one empty position for ``()``)."""
    return itertools.product(*(range(n) for n in shape))


def _row(
    indices: Array, position: tuple[int, ...], sizes: tuple[int, ...], first: int
) -> tuple[int, ...]:
    """The row of ``indices`` at ``position``, each index made non-negative, checked in C
    order against ``sizes`` (the dimensions ``first`` onward of data)."""
    row = []
    for column, size in enumerate(sizes):
        index = int(indices[(*position, column)])
        if not -size <= index < size:
            raise out_of_bounds_error(index, (*position, column), first + column, size)
        row.append(index + size if index < 0 else index)
    return tuple(row)


def _canonical(array: Array) -> Array:
    """``array``, with a bool read as any nonzero byte (canonical 0/1 bytes)."""
    if array.dtype.kind == "b":
        return np.not_equal(array.view(np.uint8), 0)
    return array


def reference_scatter_nd(data: Any, indices: Any, updates: Any, reduction: str = "none") -> Array:
    """Compute ScatterND by the contract's plain loop over the rows of ``indices`` in C order.

    For each row ``i`` (a position of ``indices.shape[:-1]``), in C order, and each element
    ``e`` of the slice ``data.shape[k:]`` in C order, ``out[row + e] = f(out[row + e],
    updates[i + e])``, one scalar at a time with the scatter's own ``f``: rows that pick
    one slice apply in their order under every reduction. Deliberately slow and simple,
    sharing no code with any backend. It assumes a valid call (no shape checks) but raises
    the backends' IndexError for the first index out of bounds in C order.

    Parameters
    ----------
    data, indices, updates : array_like
        The arrays of the call, as :func:`scatterx.scatter_nd` takes them.
    reduction : {"none", "add", "mul", "max", "min"}, optional
        How an update combines with the value it lands on.

    Returns
    -------
    numpy.ndarray
        A new array: ``data`` with every update applied (bool as canonical 0/1 bytes).

    Raises
    ------
    IndexError
        For the first index, in C order, outside ``[-s, s-1]``, ``s`` the size of the
        dimension of ``data`` it indexes.

    Examples
    --------
    >>> import numpy as np
    >>> reference_scatter_nd(np.zeros((3, 2)), np.array([[2], [0], [2]]),
    ...                      np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), reduction="add")
    array([[3., 4.],
           [0., 0.],
           [6., 8.]])
    >>> reference_scatter_nd(np.zeros(2), np.array([[0], [2]]), np.ones(2))
    Traceback (most recent call last):
    ...
    IndexError: index 2 at position (1, 0) of indices is out of bounds for axis 0 with size 2: ...
    """
    return reference_scatter_nd_with_free_nans(data, indices, updates, reduction)[0]


def reference_scatter_nd_with_free_nans(
    data: Any, indices: Any, updates: Any, reduction: str = "none"
) -> tuple[Array, Array]:
    """:func:`reference_scatter_nd`, and where the contract lets any NaN stand for its value.

    The second array is True where an add or mul met two NaN operands, as
    :func:`~scatterx.testing.reference_with_free_nans` says for ScatterElements.
    """
    data = np.asarray(data)
    indices = np.asarray(indices)
    updates = _canonical(np.asarray(updates))
    out = np.array(_canonical(data), copy=True)
    free = np.zeros(out.shape, dtype=bool)
    kind = data.dtype.kind
    arithmetic = reduction in ("add", "mul") and (kind in "fc" or data.dtype.name == "bfloat16")
    depth = indices.shape[-1]
    sizes, rest = data.shape[:depth], data.shape[depth:]
    with np.errstate(all="ignore"):
        for position in _positions(indices.shape[:-1]):
            row = _row(indices, position, sizes, 0)
            for element in _positions(rest):
                j = row + element
                old, new = out[j], updates[position + element]
                if arithmetic and _two_nans_meet(reduction, old, new):
                    free[j] = True
                out[j] = _combine(reduction, old, new, kind)
    return out, free


def reference_gather_nd(data: Any, indices: Any, batch_dims: int = 0) -> Array:
    """Compute GatherND by the contract's plain loop over the rows of ``indices`` in C order.

    For each row ``i`` (a position of ``indices.shape[:-1]``), in C order, and each element
    ``e`` of the slice ``data.shape[batch_dims + k:]``, ``out[i + e] = data[i[:batch_dims]
    + indices[i] + e]``, one scalar at a time. Deliberately slow and simple, sharing no
    code with any backend. It assumes a valid call (no shape checks) but raises the
    backends' IndexError for the first index out of bounds in C order. A bool is read as
    any nonzero byte, so the result holds canonical 0/1 bytes.

    Parameters
    ----------
    data, indices : array_like
        The arrays of the call, as :func:`scatterx.gather_nd` takes them.
    batch_dims : int, optional
        The number of leading dimensions that ``data`` and ``indices`` share, paired.

    Returns
    -------
    numpy.ndarray
        A new array of shape ``indices.shape[:-1] + data.shape[batch_dims + k:]`` and the
        dtype of ``data``.

    Raises
    ------
    IndexError
        For the first index, in C order, outside ``[-s, s-1]``, ``s`` the size of the
        dimension of ``data`` it indexes.

    Examples
    --------
    >>> import numpy as np
    >>> data = np.arange(6).reshape(3, 2)
    >>> reference_gather_nd(data, np.array([[2], [-3]]))
    array([[4, 5],
           [0, 1]])
    >>> reference_gather_nd(data, np.array([[1], [0], [1]]), batch_dims=1)
    array([1, 2, 5])
    """
    data = np.asarray(data)
    indices = np.asarray(indices)
    source = _canonical(data)
    depth = indices.shape[-1]
    sizes = data.shape[batch_dims : batch_dims + depth]
    rest = data.shape[batch_dims + depth :]
    out = np.empty(indices.shape[:-1] + rest, dtype=data.dtype)
    for position in _positions(indices.shape[:-1]):
        row = _row(indices, position, sizes, batch_dims)
        for element in _positions(rest):
            out[position + element] = source[position[:batch_dims] + row + element]
    return out
