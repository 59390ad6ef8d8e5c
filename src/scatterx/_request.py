"""The normalised, validated request that the front-end hands to a backend."""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any, NamedTuple


class ScatterRequest(NamedTuple):
    """One validated call of ``scatter_elements``: immutable, as every backend sees it.

    Backends receive this and nothing else; every metadata check of contract.md
    section 4 has passed. Index *values* are not yet checked: each backend checks
    bounds itself (before or inside its kernel) and raises
    :func:`scatterx.backend.out_of_bounds_error` for the first bad index in C order.

    Attributes
    ----------
    data, indices, updates
        The user's arrays, unmodified (array-likes already turned into arrays).
    axis
        The axis, non-negative.
    reduction
        One of ``"none"``, ``"add"``, ``"mul"``, ``"max"``, ``"min"``.
    array_type
        ``"module:qualname"`` of the array type, e.g. ``"numpy:ndarray"``.
    dtype_key
        The contract's dtype name (``"float32"``, ``"bfloat16"``, ``"StringDType"``...).
    device
        The device of ``data``.
    key
        The call's metadata (array type, dtypes, shapes, axis, reduction, device) as one
        hashable value, or None when some part cannot be hashed: what automatic choices
        are remembered by. Equal keys mean equal metadata.
    """

    data: Any
    indices: Any
    updates: Any
    axis: int
    reduction: str
    array_type: str
    dtype_key: str
    device: Any
    key: Hashable | None

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of ``data`` (and of the result)."""
        return tuple(self.data.shape)

    @property
    def index_shape(self) -> tuple[int, ...]:
        """Shape of ``indices`` and ``updates``."""
        return tuple(self.indices.shape)

    @property
    def n_updates(self) -> int:
        """Number of elements of ``indices``."""
        return math.prod(self.index_shape)

    @property
    def axis_size(self) -> int:
        """Length of ``data`` along ``axis``: indices lie in ``[-axis_size, axis_size-1]``."""
        return int(self.data.shape[self.axis])
