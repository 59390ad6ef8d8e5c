"""Layouts: reordered C-contiguous views for a scatter, strided views for a gather.

A scatter of data whose reordered dimensions are C-contiguous runs as that reordered view.

A Fortran-ordered array, or a transposed one, is C-contiguous once its dimensions are
taken in the order of decreasing strides. Updates that meet at one output element differ
only in their position along the axis, and reordering the other dimensions keeps that
position's order; so a scatter of the reordered views of data, indices, updates (and
``out``) gives the bits of the scatter of the originals. The kernels then read and write
memory in its own order, and nothing is copied into C order; the result comes back in
the layout of ``data`` (NumPy's ``order="K"``).
"""

from __future__ import annotations

import itertools
import math
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


def strided_indices(indices: Array, axis: int) -> Array | None:
    """The ``(outer, rows, inner)`` view a gather of strided data reads ``indices`` through
    where they lie, or None where it reads them in C order (copied there if need be).

    Indices contiguous in another order of dimensions (Fortran order: a transposed
    gather) are read in place: their copy into C order would cost more than the gather.
    The check before writing into ``out`` reads them flat, in their own order.
    """
    flags = indices.flags
    if flags.c_contiguous or not flags.aligned or not indices.dtype.isnative:
        return None
    if contiguous_order(indices) is None:
        return None
    return three_d_view(indices, axis)


def flags(view: Array) -> tuple[bool, bool]:
    """The C and F flags of ``view``: what numba's type of it depends on."""
    return bool(view.flags.c_contiguous), bool(view.flags.f_contiguous)


def three_d_view(array: Array, axis: int) -> Array | None:
    """A read-only view of ``array`` as ``(outer, size, inner)``, whatever its strides, or
    None where they do not allow one (dimensions of one side of the axis that do not merge).
    """
    merged: list[tuple[int, int]] = []
    for part in (slice(0, axis), slice(axis, axis + 1), slice(axis + 1, None)):
        sizes = zip(array.shape[part], array.strides[part], strict=True)
        dims = [(n, stride) for n, stride in sizes if n != 1]
        if any(s0 != s1 * n1 for (_, s0), (n1, s1) in itertools.pairwise(dims)):
            return None
        merged.append((math.prod(array.shape[part]), dims[-1][1] if dims else 0))
    shape, strides = zip(*merged, strict=True)
    return np.lib.stride_tricks.as_strided(array, shape, strides, writeable=False)


def strided_source(data: Array, axis: int, width: int) -> Array | None:
    """The ``(outer, size, inner)`` view a gather reads ``data`` through where it lies, or
    None where it reads C-ordered words (data in C order, or copied into it first).

    Strided data of one word per element (``width``) is read where it lies (a transposed
    gradient, say): copying all of data for a gather that reads part of it could cost far
    more than the gather. Elements of several words, and unaligned data, are copied.
    """
    flags = data.flags
    if (flags.c_contiguous and flags.aligned) or width != 1 or not flags.aligned:
        return None
    return three_d_view(data, axis)
