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

The positions are computed, and every index checked, before anything is written; the
translation is the one every backend shares (:func:`scatterx.backend.row_positions`,
:func:`scatterx.backend.nd_shapes` and the requests it builds).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scatterx.backend import (
    GatherNDRequest,
    GatherRequest,
    ScatterNDRequest,
    ScatterRequest,
    lined_up,
    nd_as_gather_elements,
    nd_as_scatter_elements,
    nd_shapes,
    row_positions,
)

Array = np.ndarray[Any, Any]
_INT64 = np.dtype(np.int64)


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


def _matrix(data: Array, shape: tuple[int, ...], copy: bool) -> Array:
    """``data`` viewed in ``shape``; where that takes a copy, a C-ordered copy in that shape
    (``copy``) or a new, untouched array (metadata only: the call copies it then)."""
    view = _view(data, shape)
    if view is not None:
        return view
    if copy:
        return np.ascontiguousarray(data).reshape(shape)
    return np.empty(shape, data.dtype)


def _indices(rows: Array | None, shape: tuple[int, ...]) -> Array:
    """The elements call's indices: ``rows`` lined up along the slices, or a stand-in."""
    if rows is None:
        return np.broadcast_to(np.zeros(1, _INT64), shape)
    lined: Array = lined_up(rows, shape)
    return lined


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
    shapes = nd_shapes(request)
    m, n, s = shapes.targets, shapes.rows, shapes.slice_size
    matrix = _matrix(data, (m, s), copy=rows is not None)
    out: Array | None = request.out
    if out is not None:
        out = matrix if out is data else _view(out, (m, s))
    updates = np.reshape(request.updates, (n, s))
    return nd_as_scatter_elements(request, matrix, _indices(rows, (n, s)), updates, out)


def gather_request(request: GatherNDRequest, rows: Array | None = None) -> GatherRequest:
    """The GatherElements of ``request``: along axis 1 of ``(B, M, S)`` views of data,
    indices (and ``out``) ``(B, N, S)``, as :func:`scatter_request` makes a scatter's."""
    shapes = nd_shapes(request)
    b, m, n, s = shapes.batch, shapes.targets, shapes.rows, shapes.slice_size
    cube = _matrix(request.data, (b, m, s), copy=rows is not None)
    out: Array | None = request.out
    if out is not None:
        out = _view(out, (b, n, s))
    return nd_as_gather_elements(request, cube, _indices(rows, (b, n, s)), out)


def _positions(request: ScatterNDRequest | GatherNDRequest) -> Array:
    """The flat positions of the index rows, every index checked: C-ordered int64, 1-D."""
    shapes = nd_shapes(request)
    rows: Array = row_positions(request.indices, shapes.sizes, shapes.first)
    return rows.reshape(-1)


def scatter_nd(request: ScatterNDRequest) -> Array:
    """Compute ``request`` into its ``out`` where the kernels can write it, else into a new
    array; data, indices and updates stay untouched (data too unless it is ``out``), and
    ``out`` when an index is out of bounds."""
    from ._run import scatter_elements

    data: Array = request.data
    rows = _positions(request)
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

    rows = _positions(request)
    elements = gather_request(request, rows)
    result = gather_elements(elements, rows=rows)
    if request.out is not None and result is elements.out:
        out: Array = request.out
        return out
    shaped: Array = result.reshape(request.result_shape)
    return shaped
