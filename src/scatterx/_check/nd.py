"""The shape rules of ScatterND and GatherND (contract section 14), before any index value."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

Shape = tuple[int, ...]


def check_scatter_nd_shapes(shapes: tuple[Shape, ...], unused: Any = None) -> int:
    """Check the shapes of a ScatterND's data, indices and updates; return 0 (no axis)."""
    data, indices, updates = (tuple(shape) for shape in shapes)
    depth = _depth(data, indices, len(data), "the rank of data")
    expected = indices[:-1] + data[depth:]
    if updates != expected:
        msg = (
            f"updates must have the shape indices.shape[:-1] + data.shape[{depth}:], "
            f"{expected}; got updates shape {updates} (indices {indices}, data {data})"
        )
        raise ValueError(msg)
    return 0


def check_batch_dims_type(batch_dims: Any) -> int:
    """``batch_dims`` as an int; TypeError for anything else (bool included)."""
    if isinstance(batch_dims, (bool, np.bool_)) or not isinstance(batch_dims, (int, np.integer)):
        msg = f"batch_dims must be an int, got {type(batch_dims).__name__} ({batch_dims!r})"
        raise TypeError(msg)
    checked: int = operator.index(batch_dims)
    return checked


def check_gather_nd_shapes(shapes: tuple[Shape, ...], batch_dims: Any) -> int:
    """Check the shapes of a GatherND's data and indices; return ``batch_dims``."""
    batch: int = check_batch_dims_type(batch_dims)
    data, indices = (tuple(shape) for shape in shapes)
    limit = min(len(data), len(indices))
    if not 0 <= batch < max(limit, 1):
        msg = (
            f"batch_dims must be in [0, {max(limit - 1, 0)}] (below the rank of data, "
            f"{len(data)}, and of indices, {len(indices)}); got batch_dims={batch}"
        )
        raise ValueError(msg)
    if indices[:batch] != data[:batch]:
        msg = (
            f"the first {batch} dimensions (batch_dims) of indices and data must be "
            f"equal; got indices shape {indices} and data shape {data}"
        )
        raise ValueError(msg)
    _depth(data, indices, len(data) - batch, "the rank of data less batch_dims")
    return batch


def _depth(data: Shape, indices: Shape, most: int, what: str) -> int:
    """The number of index columns (the last dimension of indices), checked."""
    if len(data) < 1:
        msg = f"data must have at least one dimension (shape {data})"
        raise ValueError(msg)
    if len(indices) < 1:
        msg = f"indices must have at least one dimension, its last the columns (shape {indices})"
        raise ValueError(msg)
    depth = indices[-1]
    if not 1 <= depth <= most:
        msg = (
            f"the last dimension of indices (the index columns, {depth}) must be from 1 to "
            f"{what}, {most}; got indices shape {indices} and data shape {data}"
        )
        raise ValueError(msg)
    return depth
