"""Layouts: data whose reordered dimensions are C-contiguous runs as that reordered view.

A Fortran-ordered array, or a transposed one, is C-contiguous once its dimensions are
taken in the order of decreasing strides. Updates that meet at one output element differ
only in their position along the axis, and reordering the other dimensions keeps that
position's order; so a scatter of the reordered views of data, indices, updates (and
``out``) gives the bits of the scatter of the originals. The kernels then read and write
memory in its own order, and nothing is copied into C order; the result comes back in
the layout of ``data`` (NumPy's ``order="K"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scatterx.backend import ScatterRequest

Array = np.ndarray[Any, Any]


def contiguous_order(data: Array) -> tuple[int, ...] | None:
    """The order of dimensions that makes ``data`` C-contiguous, where that is not their
    own order; None for C-ordered data, and for data no order makes contiguous."""
    if data.flags.c_contiguous or data.ndim < 2:
        return None
    # Longest strides first; among equal strides (length-one dimensions) keep the order.
    order = tuple(sorted(range(data.ndim), key=lambda dim: -abs(data.strides[dim])))
    if not data.transpose(order).flags.c_contiguous:
        return None
    return order


def reordered(request: ScatterRequest, order: tuple[int, ...]) -> ScatterRequest:
    """``request`` on views of its arrays with dimensions in ``order``; ``out`` stays
    ``data`` itself where it was (in place)."""
    data = request.data.transpose(order)
    out = request.out
    if out is not None:
        out = data if out is request.data else out.transpose(order)
    return request._replace(
        data=data,
        indices=request.indices.transpose(order),
        updates=request.updates.transpose(order),
        axis=order.index(request.axis),
        out=out,
        key=None,
    )


def restored(result: Array, order: tuple[int, ...]) -> Array:
    """``result`` of the reordered request, with the caller's order of dimensions."""
    return result.transpose(np.argsort(order))
