"""The tasks that route updates to the blocks of data along the axis, as a shuffle does.

With data in ``K`` blocks along the axis, a block of indices may aim at any of them. Each
block of indices and updates is *split* once by destination: the updates aimed at block
``k`` of data become a *piece*, their flat positions in that block (C order) and their
values, in the C order of the block of indices. Pieces then travel through the stages of
a butterfly (dask's task-based shuffle): at stage ``s`` each lane takes, from the ``F``
lanes that differ from it in digit ``s`` (base ``F``), the pieces whose destination has
its own digit ``s``, and joins them in the order of those lanes. Origins are numbered by
their place along the axis and digits are fixed lowest first, so a lane always holds, for
each destination, the pieces of a contiguous run of origins, joined in ascending order:
after the last stage, lane ``k`` holds every update aimed at block ``k`` of data, in the
order of the contract's loop per element. One flat in-memory call applies them.

Every function here is at module level, so that a ``distributed`` worker can unpickle it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._tasks import copied, scatter_block

Array = np.ndarray[Any, Any]
Piece = tuple[Array, Array]  # flat positions in a block of data, and the values there
Lane = dict[int, Piece]  # destination block along the axis -> its piece


def stages(origins: int, destinations: int, fan_in: int) -> tuple[int, int]:
    """``(S, F)``: the fewest stages of fan-in at most ``fan_in`` that reach every
    destination from every origin, and the smallest fan-in that needs no more."""
    lanes = max(origins, destinations, 2)
    count = 1
    while fan_in**count < lanes:
        count += 1
    base = max(2, math.ceil(lanes ** (1 / count)))
    while (base - 1) ** count >= lanes:  # float rounding, downwards
        base -= 1
    while base**count < lanes:  # and upwards
        base += 1
    return count, base


def exists(lane: int, placed: int, origins: int, destinations: int) -> bool:
    """Whether ``lane`` holds anything after its lowest ``log_F(placed)`` digits are fixed:
    some destination has those digits, and some origin the others."""
    return lane % placed < destinations and lane // placed * placed < origins


def split(
    indices: Array,
    updates: Array,
    axis: int,
    spans: tuple[Array, int],
    block_shape: tuple[int, ...],
) -> Lane:
    """The pieces of one block of indices and updates, by destination block of data.

    ``spans``: the starts of data's blocks along the axis (an array, which dask does not
    walk through as it does a tuple), and its size; ``block_shape``
    the shape of the data blocks of this column, the axis left as 1 (each block has its
    own length there). It does not wait for the bounds guard (only the applies do, so that
    dask's ordering of the graph does not tie every task to every block of indices): an
    index out of bounds is sent to the nearest block, never applied, and raises nothing
    here, so that the guard's error is the one raised.
    """
    starts, size = spans
    target = np.asarray(indices).astype(np.int64).reshape(-1)
    target[target < 0] += size
    bounds = starts
    dest = np.clip(np.searchsorted(bounds, target, side="right") - 1, 0, bounds.size - 1)
    lengths = np.diff(np.append(bounds, size))
    coords = np.unravel_index(np.arange(target.size), indices.shape)
    before = np.ravel_multi_index(coords[:axis], block_shape[:axis]) if axis else 0
    after_shape = block_shape[axis + 1 :]
    after = np.ravel_multi_index(coords[axis + 1 :], after_shape) if after_shape else 0
    local = target - bounds[dest]
    flat = (before * lengths[dest] + local) * math.prod(after_shape) + after
    order = np.argsort(dest, kind="stable")
    dest, flat = dest[order], flat[order]
    values = updates.reshape(-1)[order]
    cuts = np.flatnonzero(np.diff(dest)) + 1
    firsts = np.concatenate([[0], cuts])
    lasts = np.concatenate([cuts, [dest.size]])
    largest = int(lengths.max()) * math.prod(block_shape)
    kind = np.int32 if largest < 2**31 else np.int64
    return {
        int(dest[lo]): (flat[lo:hi].astype(kind), values[lo:hi])
        for lo, hi in zip(firsts, lasts, strict=True)
        if hi > lo
    }


def merge(digit: int, placed: int, base: int, *lanes: Lane) -> Lane:
    """The pieces whose destination has ``digit`` at place ``placed`` (a power of
    ``base``), from ``lanes`` in ascending order of origin, joined in that order."""
    joined: dict[int, list[Piece]] = {}
    for lane in lanes:
        for dest, piece in lane.items():
            if dest // placed % base == digit:
                joined.setdefault(dest, []).append(piece)
    return {dest: _join(pieces) for dest, pieces in joined.items()}


def _join(pieces: list[Piece]) -> Piece:
    if len(pieces) == 1:
        return pieces[0]
    values = pieces[0][1]
    return (
        np.concatenate([p[0] for p in pieces]),
        np.concatenate([p[1] for p in pieces], dtype=values.dtype),  # keeps byte order
    )


def applied(
    block: Array,
    checked: None,
    dest: int,
    axis: int,
    reduction: str,
    digit: int,
    placed: int,
    base: int,
    *lanes: Lane,
) -> Any:
    """The last stage of lane ``dest`` (the pieces of ``lanes`` aimed at block ``dest``
    joined, as :func:`merge` joins them), and block ``dest`` of data with them applied, in
    order: one flat call. ``checked`` is the bounds guard's value (None): it orders this
    task after it, so every position is in the block."""
    piece = merge(digit, placed, base, *lanes).get(dest)
    if piece is None:
        return copied(block, axis, reduction)
    positions, values = piece
    flat = scatter_block(block.reshape(-1), positions, values, 0, reduction)
    return flat.reshape(block.shape)
