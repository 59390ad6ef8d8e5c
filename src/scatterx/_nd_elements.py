"""ScatterND and GatherND as ScatterElements and GatherElements: the translation backends share.

A ScatterND whose index rows hold ``k`` indices is a ScatterElements along axis 0 of data
viewed as ``(M, *slice)``, ``M = prod(shape[:k])``: each index row names one row of that
view (its flat position), and its slice of updates, one row of updates viewed as
``(N, *slice)``, takes that position at every element (the position broadcast along the
row). Rows that pick one slice meet at its elements in their order along axis 0, which is
the ScatterElements order: the contract's bits for every reduction. A GatherND with ``b``
batch dimensions is likewise a GatherElements along axis 1 of data viewed as
``(B, M, *slice)``, its indices ``(B, N, *slice)``.

Everything here works on any array of the array API (NumPy, CuPy; a block of a Dask
array), through ``array_api_compat``; a backend chooses how to view data and lay out the
positions (a whole-row kernel reads one position per row, never an array of the size of
updates).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ._errors import out_of_bounds_error
from ._request import GatherNDRequest, GatherRequest, ScatterNDRequest, ScatterRequest

__all__ = [
    "NDShapes",
    "first_bad_row_index",
    "lined_up",
    "nd_as_gather_elements",
    "nd_as_scatter_elements",
    "nd_shapes",
    "row_index_error",
    "row_positions",
]


class NDShapes(NamedTuple):
    """The sizes of a ScatterND or GatherND as an elements call.

    Attributes
    ----------
    batch
        ``B``: the product of the batch dimensions of data (1 for a scatter).
    targets
        ``M``: the slices of each batch of data, the product of the dimensions indexed.
    rows
        ``N``: the index rows of each batch.
    slice_shape
        The shape of one slice: data's dimensions after those indexed.
    first
        The first dimension of data that a row's columns index (``batch_dims``).
    sizes
        The dimensions of data that a row's columns index, in order.
    """

    batch: int
    targets: int
    rows: int
    slice_shape: tuple[int, ...]
    first: int
    sizes: tuple[int, ...]

    @property
    def slice_size(self) -> int:
        """``S``: the elements of one slice."""
        return math.prod(self.slice_shape)


def nd_shapes(request: ScatterNDRequest | GatherNDRequest) -> NDShapes:
    """The sizes of ``request`` as an elements call (see :class:`NDShapes`).

    Examples
    --------
    >>> import numpy as np
    >>> from scatterx._check import SCATTER_ND, check
    >>> from scatterx.backend import nd_shapes
    >>> arrays = (np.zeros((4, 3, 2)), np.array([[1], [3]]), np.ones((2, 3, 2)))
    >>> request = check(SCATTER_ND, arrays, None, "none")
    >>> nd_shapes(request)
    NDShapes(batch=1, targets=4, rows=2, slice_shape=(3, 2), first=0, sizes=(4,))
    """
    shape, index_shape = tuple(request.data.shape), tuple(request.indices.shape)
    first = getattr(request, "batch_dims", 0)
    end = first + int(index_shape[-1])
    return NDShapes(
        batch=math.prod(shape[:first]),
        targets=math.prod(shape[first:end]),
        rows=math.prod(index_shape[first:-1]),
        slice_shape=shape[end:],
        first=first,
        sizes=shape[first:end],
    )


def row_positions(
    indices: Any, sizes: tuple[int, ...], first: int = 0, *, checked: bool = False
) -> Any:
    """The flat position of each row of ``indices`` in dimensions of ``sizes``.

    Parameters
    ----------
    indices : array
        Integer indices of shape ``(..., k)``, ``k = len(sizes)``, of any array library.
    sizes : tuple of int
        The dimensions of data that the ``k`` columns index.
    first : int
        The dimension of data that the first column indexes (for the error).
    checked : bool
        Whether every index is known in bounds already: then nothing is checked.

    Returns
    -------
    array
        A new int64 array of ``indices.shape[:-1]``, in ``indices``' library and device.

    Raises
    ------
    IndexError
        The contract's, for the first index out of bounds in C order, naming the dimension
        of data it indexes; computed from the columns' extremes first, read back at once.

    Examples
    --------
    >>> import numpy as np
    >>> from scatterx.backend import row_positions
    >>> row_positions(np.array([[1, 2], [-1, 0]]), (4, 3))
    array([5, 9])
    """
    import array_api_compat

    xp = array_api_compat.array_namespace(indices)
    depth = len(sizes)
    rows = xp.reshape(indices, (-1, depth))
    lead = tuple(indices.shape[:-1])
    if not rows.shape[0]:
        return xp.zeros(lead, dtype=xp.int64, device=array_api_compat.device(indices))
    # Every column's extremes in one read: one host synchronisation on a GPU.
    extremes = [] if checked else _extremes(xp, rows, depth)
    positions = None
    for column, size in enumerate(sizes):
        if extremes:
            low, high = extremes[2 * column], extremes[2 * column + 1]
            if low < -size or high >= size:
                found = first_bad_row_index(indices, sizes)
                if found is not None:
                    raise row_index_error(found[1], found[0], first, sizes)
        wide = xp.astype(rows[:, column], xp.int64)  # a copy: the caller's indices stay
        if not extremes or extremes[2 * column] < 0:
            wide += xp.where(wide < 0, size, 0)
        if positions is None:
            positions = wide
        else:
            positions *= size
            positions += wide
    return xp.reshape(positions, lead)


def _extremes(xp: Any, rows: Any, depth: int) -> list[int]:
    """The least and the greatest index of each column of ``rows``, as Python ints."""
    found = [f(rows[:, column]) for column in range(depth) for f in (xp.min, xp.max)]
    values: list[int] = xp.stack([xp.astype(xp.asarray(v), xp.int64) for v in found]).tolist()
    return values


def first_bad_row_index(indices: Any, sizes: tuple[int, ...]) -> tuple[tuple[int, ...], int] | None:
    """The position (in ``indices``) and value of its first index out of bounds in C order,
    each column's bounds those of its size in ``sizes``; None when every index is in bounds.

    Examples
    --------
    >>> import numpy as np
    >>> from scatterx.backend import first_bad_row_index
    >>> first_bad_row_index(np.array([[1, 2], [4, -5]]), (4, 3))
    ((1, 0), 4)
    """
    import array_api_compat

    if not math.prod(indices.shape):
        return None
    xp = array_api_compat.array_namespace(indices)
    rows = xp.astype(xp.reshape(indices, (-1, len(sizes))), xp.int64)
    limits = xp.asarray(sizes, dtype=xp.int64, device=array_api_compat.device(indices))
    bad = xp.reshape((rows < -limits) | (rows >= limits), (-1,))
    if not bool(xp.any(bad)):
        return None
    flat = int(xp.argmax(xp.astype(bad, xp.int8)))
    position = tuple(int(p) for p in np.unravel_index(flat, tuple(indices.shape)))
    return position, int(indices[position])


def row_index_error(
    value: int, position: tuple[int, ...], first: int, sizes: tuple[int, ...]
) -> IndexError:
    """The contract's IndexError for ``value`` at ``position`` of a ScatterND's or GatherND's
    indices: the axis is the dimension of data that its column indexes (``first`` onwards)."""
    column = position[-1]
    return out_of_bounds_error(value, position, first + column, sizes[column])


def lined_up(positions: Any, shape: tuple[int, ...]) -> Any:
    """``positions`` (one per row: ``prod(shape[:-1])`` of them) broadcast along the last
    dimension of ``shape``: the indices of the elements call, as a view, no new array."""
    import array_api_compat

    xp = array_api_compat.array_namespace(positions)
    return xp.broadcast_to(xp.reshape(positions, (*shape[:-1], 1)), shape)


def nd_as_scatter_elements(
    request: ScatterNDRequest, data: Any, indices: Any, updates: Any, out: Any = None
) -> ScatterRequest:
    """The ScatterElements along axis 0 that ``request`` runs as, on ``data``, ``indices``,
    ``updates`` (and ``out``) in the shapes of that call; the reduction, array type, dtype
    key and device those of ``request``."""
    return ScatterRequest(
        data,
        indices,
        updates,
        0,
        request.reduction,
        request.array_type,
        request.dtype_key,
        request.device,
        None,
        out,
    )


def nd_as_gather_elements(
    request: GatherNDRequest, data: Any, indices: Any, out: Any = None
) -> GatherRequest:
    """The GatherElements along axis 1 that ``request`` runs as, on ``data`` and ``indices``
    (and ``out``) of shape ``(B, M, *slice)`` and ``(B, N, *slice)``."""
    return GatherRequest(
        data, indices, 1, request.array_type, request.dtype_key, request.device, None, out
    )
