"""Geometry of a call: columns, the axis walk, and merged dims as the kernels read them."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    """Where each position of ``indices`` lands in the C-ordered result.

    An index position is ``(o, k, n)``: ``o`` over the dims before the axis, ``k`` along
    the axis, ``n`` over the dims after it, each flat in C order; so its flat position in
    ``indices`` is ``(o * axis_len + k) * n_inner + n``. Its target in the result is
    ``offset(outer, o) + offset(inner, n) + j * stride``, with ``j`` the wrapped index.

    Attributes
    ----------
    outer, inner
        ``(length, stride)`` of the merged dims before and after the axis; lengths from
        ``indices``, strides in elements of the result.
    axis_len
        Length of ``indices`` along the axis: the steps of each column.
    size
        Length of ``data`` along the axis: indices lie in ``[-size, size - 1]``.
    stride
        Stride of the axis in the result, in elements.
    """

    outer: tuple[tuple[int, int], ...]
    inner: tuple[tuple[int, int], ...]
    axis_len: int
    size: int
    stride: int

    @property
    def n_outer(self) -> int:
        """Number of positions before the axis."""
        return math.prod(length for length, _ in self.outer)

    @property
    def n_inner(self) -> int:
        """Number of positions after the axis."""
        return math.prod(length for length, _ in self.inner)

    @property
    def n_cols(self) -> int:
        """Number of columns: sets of updates that no other column's updates can meet."""
        return self.n_outer * self.n_inner

    def geometry(self) -> tuple[int, ...]:
        """The ``geom`` argument of the kernels: counts, then ``(length, stride)`` pairs."""
        pairs = [value for dim in (*self.outer, *self.inner) for value in dim]
        return (len(self.outer), len(self.inner), *pairs)


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = [1] * len(shape)
    for dim in range(len(shape) - 2, -1, -1):
        strides[dim] = strides[dim + 1] * shape[dim + 1]
    return tuple(strides)


def _merge(dims: list[tuple[int, int, int]]) -> tuple[tuple[int, int], ...]:
    """Merge ``(index length, data length, stride)`` dims into few ``(length, stride)`` ones.

    A dim of length 1 adds nothing; a dim whose index length equals its data length
    continues the one before it, so both read as one flat dim, unless a skipped dim of
    data lies between them.
    """
    merged: list[tuple[int, int]] = []
    adjacent = False
    for length, data_length, stride in dims:
        if length == 1:
            adjacent = adjacent and data_length == 1
            continue
        if adjacent and length == data_length:
            previous_length, _ = merged[-1]
            merged[-1] = (previous_length * length, stride)
        else:
            merged.append((length, stride))
        adjacent = True
    return tuple(merged)


def layout(data_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int) -> Layout:
    """Describe a call for the kernels; ``axis`` is non-negative."""
    strides = _c_strides(data_shape)
    dims = list(zip(index_shape, data_shape, strides, strict=True))
    return Layout(
        outer=_merge(dims[:axis]),
        inner=_merge(dims[axis + 1 :]),
        axis_len=index_shape[axis],
        size=data_shape[axis],
        stride=strides[axis],
    )


def targets(lay: Layout, index_position: tuple[int, int, int], j: int) -> int:
    """Flat target in the result of the update at ``(o, k, n)`` with wrapped index ``j``.

    The host-side twin of the kernels' ``scx_column_base``; the tests check it against
    NumPy's own flat positions.
    """
    o, _, n = index_position
    return _offset(lay.outer, o) + _offset(lay.inner, n) + j * lay.stride


def _offset(dims: tuple[tuple[int, int], ...], flat: int) -> int:
    offset = 0
    for length, stride in reversed(dims):
        flat, rest = divmod(flat, length)
        offset += rest * stride
    return offset
