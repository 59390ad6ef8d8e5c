"""ScatterND and GatherND on the numba backend: ScatterElements and GatherElements along the
rows of data viewed as a matrix, on the kernels those run.

A ScatterND whose index rows hold ``k`` indices is a ScatterElements along axis 0 of data
viewed as ``(M, S) = (prod(shape[:k]), prod(shape[k:]))``: each index row names one row of
that matrix (its flat position), and its slice of updates is one row of updates viewed as
``(N, S)``. Every element of an update row has that row's position as its index: index rows
constant along the row, as an embedding gradient's, which the whole-row strategy
(``kernels.rows``) reads as one index per row, the positions themselves, never broadcast
into an ``(N, S)`` array. Rows that pick one slice meet at its elements in their order
along axis 0, which is the ScatterElements order: the numpy backend's bits for every
reduction.

GatherND is a GatherElements along axis 1 of data viewed as ``(B, M, S)`` (``B`` the batch),
whose index rows hold one position each; the gather kernel's whole-row units read one
index per row likewise.

The positions are computed, and every index checked, before anything is written.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from scatterx.backend import (
    GatherNDRequest,
    GatherRequest,
    ScatterNDRequest,
    ScatterRequest,
    out_of_bounds_error,
)

Array = np.ndarray[Any, Any]
_INT64 = np.dtype(np.int64)


def row_positions(indices: Array, shape: tuple[int, ...], first: int = 0) -> Array:
    """The flat position of each row of ``indices`` in the dimensions ``first`` to
    ``first + k`` of ``shape`` (``k`` the last dimension of ``indices``): a new C-ordered
    int64 array of ``indices.shape[:-1]``.

    Raises the contract's IndexError for the first index out of bounds in C order, with
    the dimension of data it indexes as the axis, as the numpy backend does.
    """
    depth = indices.shape[-1]
    sizes = shape[first : first + depth]
    rows = indices.reshape(-1, depth)
    positions = np.zeros(rows.shape[0], _INT64)
    if not rows.shape[0]:
        return positions.reshape(indices.shape[:-1])
    for column, size in enumerate(sizes):
        values = rows[:, column]
        low, high = int(values.min()), int(values.max())
        if low < -size or high >= size:
            _raise_first_bad(indices, sizes, first)
        wide = values.astype(_INT64)  # a copy: the caller's indices stay untouched
        if low < 0:
            wide += np.where(wide < 0, size, 0)
        if column:
            positions *= size
            positions += wide
        else:
            positions = wide
    return positions.reshape(indices.shape[:-1])


def _raise_first_bad(indices: Array, sizes: tuple[int, ...], first: int) -> None:
    """Raise the IndexError for the first index of ``indices`` out of ``sizes``, in C order."""
    rows = indices.reshape(-1, len(sizes)).astype(_INT64)
    limits = np.array(sizes, dtype=_INT64)
    bad = (rows < -limits) | (rows >= limits)
    flat = int(np.argmax(bad.reshape(-1)))
    position = tuple(int(p) for p in np.unravel_index(flat, indices.shape))
    column = position[-1]
    raise out_of_bounds_error(int(indices[position]), position, first + column, sizes[column])


def _view(array: Array, shape: tuple[int, ...]) -> Array | None:
    """``array`` viewed in ``shape`` (C order of elements), or None where that takes a copy."""
    try:
        view: Array = np.reshape(array, shape, copy=False)
    except ValueError:
        return None
    except TypeError:  # NumPy 2.0: no copy argument
        view = array.reshape(shape)
        if view.size and not np.may_share_memory(view, array):
            return None
    return view


def _matrix(data: Array, shape: tuple[int, ...]) -> tuple[Array, bool]:
    """``data`` viewed in ``shape``, or a C-ordered copy of it in that shape; whether a view."""
    view = _view(data, shape)
    if view is not None:
        return view, True
    return np.ascontiguousarray(data).reshape(shape), False


def _sizes(shape: tuple[int, ...], *cuts: int) -> tuple[int, ...]:
    """The products of ``shape``'s dimensions between the cuts (and its ends)."""
    bounds = (0, *cuts, len(shape))
    return tuple(math.prod(shape[lo:hi]) for lo, hi in itertools.pairwise(bounds))


def moved(request: ScatterNDRequest | GatherNDRequest) -> int:
    """The elements a call moves: a scatter's updates, a gather's result."""
    if isinstance(request, ScatterNDRequest):
        return math.prod(request.updates.shape)
    return math.prod(request.result_shape)


def elements_request(request: ScatterNDRequest | GatherNDRequest) -> ScatterRequest | GatherRequest:
    """The ScatterElements or GatherElements that ``request`` runs as, as far as its
    metadata goes (see :func:`scatter_request`)."""
    if isinstance(request, ScatterNDRequest):
        return scatter_request(request)
    return gather_request(request)


def scatter_request(request: ScatterNDRequest, rows: Array | None = None) -> ScatterRequest:
    """The ScatterElements of ``request``: along axis 0 of ``(M, S)`` views of data (and of
    ``out``), indices the index rows' positions ``rows`` broadcast along each row.

    Without ``rows``, the request as far as its metadata goes (what automatic choice asks
    about): its indices a stand-in, and data a new, untouched array where it cannot be
    viewed in that shape (the call copies it then).
    """
    data: Array = request.data
    m, s = _sizes(data.shape, request.depth)
    n = math.prod(request.indices.shape[:-1])
    if rows is None:
        matrix = _view(data, (m, s))
        if matrix is None:
            matrix = np.empty((m, s), data.dtype)
        positions: Array = np.zeros(1, _INT64)
    else:
        matrix, _ = _matrix(data, (m, s))
        positions = rows
    out: Array | None = request.out
    if out is not None:
        out = matrix if out is data else _view(out, (m, s))
    return ScatterRequest(
        matrix,
        np.broadcast_to(positions.reshape(-1, 1), (n, s)),
        np.reshape(request.updates, (n, s)),
        0,
        request.reduction,
        request.array_type,
        request.dtype_key,
        request.device,
        None,
        out,
    )


def gather_request(request: GatherNDRequest, rows: Array | None = None) -> GatherRequest:
    """The GatherElements of ``request``: along axis 1 of ``(B, M, S)`` views of data,
    indices (and ``out``) ``(B, N, S)``, as :func:`scatter_request` makes a scatter's."""
    data: Array = request.data
    batch = request.batch_dims
    b, m, s = _sizes(data.shape, batch, batch + request.depth)
    n = math.prod(request.indices.shape[batch:-1])
    if rows is None:
        cube = _view(data, (b, m, s))
        if cube is None:
            cube = np.empty((b, m, s), data.dtype)
        positions: Array = np.zeros(1, _INT64)
    else:
        cube, _ = _matrix(data, (b, m, s))
        positions = rows
    out: Array | None = request.out
    if out is not None:
        out = _view(out, (b, n, s))
    return GatherRequest(
        cube,
        np.broadcast_to(positions.reshape(b, n, 1) if rows is not None else positions, (b, n, s)),
        1,
        request.array_type,
        request.dtype_key,
        request.device,
        None,
        out,
    )


def scatter_nd(request: ScatterNDRequest) -> Array:
    """Compute ``request`` into its ``out`` where the kernels can write it, else into a new
    array; data, indices and updates stay untouched (data too unless it is ``out``), and
    ``out`` when an index is out of bounds."""
    from ._run import scatter_elements

    data: Array = request.data
    rows = row_positions(request.indices, data.shape).reshape(-1)
    elements = scatter_request(request, rows)
    result = scatter_elements(elements, rows=rows)
    out = request.out
    # Written into ``out`` itself: not where ``out`` is data that was copied to be viewed.
    if out is not None and result is elements.out and np.may_share_memory(result, out):
        written: Array = out
        return written
    shaped: Array = result.reshape(data.shape)
    return shaped


def gather_nd(request: GatherNDRequest) -> Array:
    """Gather ``request`` into its ``out`` where the kernel can write it, else into a new
    C-ordered array of its result shape; ``out`` stays untouched when an index is out of
    bounds. bool results are canonical 0/1 bytes, as the numpy backend gives."""
    from ._gather import gather_elements

    rows = row_positions(request.indices, request.data.shape, request.batch_dims).reshape(-1)
    elements = gather_request(request, rows)
    result = gather_elements(elements, rows=rows)
    if request.out is not None and result is elements.out:
        out: Array = request.out
        return out
    shaped: Array = result.reshape(request.result_shape)
    return shaped
