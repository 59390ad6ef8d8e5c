"""ScatterND and GatherND on Dask arrays: the lazy ScatterElements and GatherElements along
the rows of data with its indexed dimensions flattened.

A ScatterND whose index rows hold ``k`` indices is a ScatterElements along axis 0 of data
reshaped to ``(prod(shape[:k]), *shape[k:])``: each index row names one row of it (its
flat position), and updates reshaped to ``(rows, *shape[k:])`` take that position at every
element of their row (the positions broadcast along the slice, a view in each block). Rows
that pick one slice meet in their order along axis 0, the order of the contract, so the
graph of :mod:`scatterx_dask._run` gives the numpy backend's bits: blocks of data along
the trailing dimensions are columns, independent of each other; blocks along the indexed
ones are reached through its route. A GatherND with ``b`` batch dimensions is likewise a
GatherElements along axis 1 of data reshaped to ``(batch, rows of data, *slice)``.

Reshaping merges the indexed dimensions (and the batch's): where data is chunked along any
of them but the first, Dask's reshape makes them whole first (the first's chunks shrink to
keep blocks near their size); a scatter's result is rechunked back to data's chunks, a
gather's keeps what the reshape gives.

Bounds. The positions are computed block by block of indices, after a guard that checks
every index against the dimension its column indexes, on a clone of the indices' graph, as
:mod:`scatterx_dask._graph` checks a ScatterElements': computing any block that reads
indices raises the contract's IndexError for the first bad index of the whole, in C order.
The elements graph then needs no guard of its own. Where the slices are empty (a dimension
of zero after the indexed ones), no block reads indices, and every block of the result
waits for the guard: the numpy backend checks every index then too.
"""

from __future__ import annotations

import importlib
import math
from typing import Any, NamedTuple

import numpy as np

from scatterx.backend import (
    GatherNDRequest,
    ScatterNDRequest,
    nd_as_gather_elements,
    nd_as_scatter_elements,
    nd_shapes,
)

from . import _graph, _run, _tasks
from ._plan import plan


class Rows(NamedTuple):
    """The index rows of a call as flat positions: lazily, after their guard."""

    positions: Any  # Dask array of int64, of the shape ``indices.shape[:-1]``
    guard: str  # the key of the guard, in the graph of ``positions``


def _rows(indices: Any, sizes: tuple[int, ...], first: int, token: str) -> Rows:
    """The flat positions of the rows of ``indices`` in the dimensions ``first`` to
    ``first + k`` of data (of ``sizes``), each block after the guard of every index."""
    da: Any = importlib.import_module("dask.array")
    from dask.highlevelgraph import HighLevelGraph

    name = f"scatterx-nd-rows-{token}"
    clone = _run._clone(indices, f"rows-checked-{token}")
    bounds = _graph.Bounds(first, sizes, _tasks.first_bad_in_rows_of, _tasks.guard_rows)
    graph: dict[Any, Any] = {}
    guard = _graph.guard_of(graph, name, clone, bounds)
    whole = indices.rechunk({indices.ndim - 1: -1})
    for block in np.ndindex(*whole.numblocks[:-1]):
        key = (whole.name, *block, 0)
        graph[(name, *block)] = (_tasks.row_positions_of, key, guard, sizes)
    rows = HighLevelGraph.from_collections(name, graph, dependencies=[whole, clone])
    return Rows(da.Array(rows, name, whole.chunks[:-1], dtype=np.int64), guard)


def _broadcast(positions: Any, chunks: tuple[tuple[int, ...], ...], axis: int) -> Any:
    """``positions`` (of the dimensions up to ``axis``) as indices of ``chunks``: each
    block a view of its positions, broadcast along the slice's dimensions."""
    da: Any = importlib.import_module("dask.array")
    lead = positions.rechunk(chunks[: axis + 1])
    shape = tuple(sum(sizes) for sizes in chunks)
    column = lead.reshape(lead.shape + (1,) * (len(chunks) - axis - 1))
    return da.broadcast_to(column, shape, chunks=chunks)


def _after(result: Any, rows: Rows) -> Any:
    """``result`` with each block waiting for the guard of ``rows``: where no block reads
    indices (empty slices), as the numpy backend checks every index then too."""
    da: Any = importlib.import_module("dask.array")
    from dask.highlevelgraph import HighLevelGraph

    name = f"{result.name}-checked"
    graph: dict[Any, Any] = {
        (name, *block): (_tasks.passed, (result.name, *block), rows.guard)
        for block in np.ndindex(*result.numblocks)
    }
    layers = HighLevelGraph.from_collections(name, graph, dependencies=[result, rows.positions])
    return da.Array(layers, name, result.chunks, meta=result._meta)


def _no_indices(shape: tuple[int, ...]) -> Any:
    """Indices of ``shape`` with no element: the elements path then reads none."""
    da: Any = importlib.import_module("dask.array")
    return da.zeros(shape, dtype=np.int64)


def scatter_nd(request: ScatterNDRequest) -> Any:
    """The lazy result of ``request`` (of Dask arrays): nothing is computed here."""
    from dask.base import tokenize

    data = _run._strings_checked(request.data, "data")
    updates = _run._strings_checked(request.updates, "updates")
    shapes = nd_shapes(request)
    slice_shape, count = shapes.slice_shape, shapes.rows
    matrix = data.reshape((shapes.targets, *slice_shape))
    flat_updates = updates.reshape((count, *slice_shape))
    token = tokenize("scatter_nd", data, request.indices, updates, request.reduction)
    rows = _rows(request.indices, shapes.sizes, 0, token) if count else None
    if rows is None or 0 in slice_shape:
        lined_up = _no_indices(flat_updates.shape)  # the elements path copies data
    else:
        chunks = plan(matrix.chunks, flat_updates.chunks, flat_updates.chunks, 0).index_chunks
        lined_up = _broadcast(rows.positions.reshape((count,)), chunks, 0)
    elements = nd_as_scatter_elements(request, matrix, lined_up, flat_updates)
    # back in data's chunks where the reshape merged chunked dimensions (else a no-op)
    result = _run.scatter_elements(elements, checked=True).reshape(data.shape)
    result = result.rechunk(data.chunks)
    return result if rows is None or 0 not in slice_shape else _after(result, rows)


def gather_nd(request: GatherNDRequest) -> Any:
    """The lazy result of the gather ``request`` (of Dask arrays): nothing is computed here."""
    from dask.base import tokenize

    data = _run._strings_checked(request.data, "data")
    shapes = nd_shapes(request)
    slice_shape, lead = shapes.slice_shape, (shapes.batch, shapes.rows)
    cube = data.reshape((shapes.batch, shapes.targets, *slice_shape))
    token = tokenize("gather_nd", data, request.indices, shapes.first)
    count = math.prod(lead)
    rows = _rows(request.indices, shapes.sizes, shapes.first, token) if count else None
    if rows is None or 0 in slice_shape:
        lined_up = _no_indices((*lead, *slice_shape))
    else:
        positions = rows.positions.reshape(lead)
        given = (*positions.chunks, *cube.chunks[2:])
        chunks = plan(cube.chunks, given, given, 1).index_chunks
        lined_up = _broadcast(positions, chunks, 1)
    elements = nd_as_gather_elements(request, cube, lined_up)
    result = _run.gather_elements(elements, checked=True).reshape(request.result_shape)
    return result if rows is None or 0 not in slice_shape else _after(result, rows)
