"""ScatterND and GatherND on the GPU: the ScatterElements and GatherElements they translate
to (:mod:`scatterx._nd_elements`, shared with the numba and dask backends), on the kernels
of those.

A ScatterND whose index rows hold ``k`` indices is a ScatterElements along axis 0 of data
viewed as ``(M, S) = (prod(shape[:k]), prod(shape[k:]))``, its indices each index row's
flat position broadcast along the row. Each row's position is computed, and every index
checked, before anything is written (one host synchronisation reads the columns'
extremes); the elements kernels then check nothing and read nothing back. Strategy
``rows`` (a fast path) sorts the positions themselves, one per row, and walks the sorted
rows; the other strategies read the positions broadcast into an array of the updates'
shape (int32 where data has under 2**31 rows), as they read a ScatterElements' indices.

A GatherND with ``b`` batch dimensions is a GatherElements along axis 1 of data viewed as
``(B, M, S)``: its kernel reads the positions broadcast with a stride of zero along each
row, so no index array of the result's shape is made.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scatterx.backend import (
    GatherNDRequest,
    ScatterNDRequest,
    lined_up,
    nd_as_gather_elements,
    nd_as_scatter_elements,
    nd_shapes,
    row_positions,
)

from . import _gather, _run


def _into(out: Any) -> Any:
    """``out`` where the kernels can write into it (C-ordered), else None."""
    return out if out is not None and out.flags.c_contiguous else None


def scatter_nd(request: ScatterNDRequest, force: str | None = None) -> Any:
    """Compute ``request`` on cupy arrays, on the device of ``data`` and the current stream:
    into ``out`` when it is C-ordered, else into a new C-ordered array. ``force`` names a
    strategy of :func:`scatterx_cupy._run.scatter_elements` (tests); any gives the same bits.
    """
    data = request.data
    with data.device:
        shapes = nd_shapes(request)
        rows = row_positions(request.indices, shapes.sizes).reshape(-1)
        m, n, s = shapes.targets, shapes.rows, shapes.slice_size
        matrix = data.reshape(m, s)
        into = _into(request.out)
        target = None if into is None else matrix if into is data else into.reshape(m, s)
        small = rows.astype(np.int32) if m < 2**31 else rows  # half the reads of int64
        updates = request.updates.reshape(n, s)
        elements = nd_as_scatter_elements(request, matrix, lined_up(small, (n, s)), updates, target)
        result = _run.scatter_elements(elements, force=force, rows=rows)
        return into if into is not None else result.reshape(data.shape)


def gather_nd(request: GatherNDRequest) -> Any:
    """Gather ``request`` on cupy arrays, on the device of ``data`` and the current stream:
    into ``out`` when it is C-ordered, else into a new C-ordered array of the result's shape.
    bool results are canonical 0/1 bytes."""
    with request.data.device:
        shapes = nd_shapes(request)
        rows = row_positions(request.indices, shapes.sizes, shapes.first)
        b, m, n, s = shapes.batch, shapes.targets, shapes.rows, shapes.slice_size
        cube = request.data.reshape(b, m, s)
        into = _into(request.out)
        target = None if into is None else into.reshape(b, n, s)
        elements = nd_as_gather_elements(request, cube, lined_up(rows, (b, n, s)), target)
        result = _gather.gather_elements(elements, checked=True)
        return into if into is not None else result.reshape(request.result_shape)
