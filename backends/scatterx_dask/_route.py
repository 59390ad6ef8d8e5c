"""The tasks that route updates to the blocks of data along the axis, as a shuffle does.

With data in ``K`` blocks along the axis, a block of indices may aim at any of them. Each
run of consecutive blocks of indices and updates along the axis is *split* once by
destination (:mod:`scatterx_dask._split` sorts it): the updates aimed at block ``k`` of
data become a *piece*, their flat positions in that block (C order) and their values, in
the C order of the run. Pieces then travel through the stages of a butterfly (dask's
task-based shuffle): at stage ``s`` each lane takes, from the ``F`` lanes that differ
from it in digit ``s`` (base ``F``), the pieces whose destination has its own digit
``s``, and lists them in the order of those lanes. Origins are numbered by their place
along the axis and digits are fixed lowest first, so a lane always holds, for each
destination, the pieces of a contiguous run of origins, in ascending order: after the
last stage, lane ``k`` holds every update aimed at block ``k`` of data, in the order of
the contract's loop per element. It joins them, and one flat in-memory call applies them.

A gather routes its *requests* the same way (:func:`split_requests`: each element's flat
position in its block of data and its place in its run), reads them from each block of
data with one flat in-memory gather (:func:`read`), and routes the elements back to their
runs through a second butterfly, from the blocks of data to the runs (:func:`answered`).

Every function here is at module level, so that a ``distributed`` worker can unpickle it.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ._split import by_destination
from ._tasks import BadIndex, copied, first_bad, gather_block, scatter_block

Array = np.ndarray[Any, Any]
Piece = tuple[Array, Array]  # flat positions in a block of data, and the values there
#: A gather's piece: flat positions in a block of data, their places in the run that asks
#: for them, and the run's number (on the way there); those places and the elements read
#: (on the way back).
Request = tuple[Array, Array, int]
Answer = tuple[Array, Array]
#: Destination (a block of data, or a gather's run on the way back) -> its pieces, in order.
Lane = dict[int, list[Any]]


class Split(NamedTuple):
    """What a split makes: its pieces by destination, and its run's first bad index (the
    bounds guard's tree reads that alone, through :func:`bad`)."""

    pieces: Lane
    bad: BadIndex | None


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
    indices: list[Array],
    updates: list[Array],
    axis: int,
    spans: tuple[Array, int, int],
    block_shape: tuple[int, ...],
    place: tuple[tuple[int, ...], tuple[int, ...]],
) -> Split:
    """The pieces of a run of blocks of indices and updates (consecutive along the axis,
    joined there), by destination block of data, and the run's first bad index (C order).

    ``spans``: the starts of data's blocks along the axis (an array, which dask does not
    walk through as it does a tuple), its size, and the length every block but the last
    has where the last is no longer (0 where not: the blocks are found by a search, not a
    division); ``block_shape`` the shape of the data blocks of this column, the axis left
    as 1 (each block has its own length there); ``place`` the run's offsets in the whole
    indices, and their shape. The bounds guard reads the first bad index found here (so
    that the indices are read once, by the splits): an index out of bounds is sent to the
    nearest block, never applied (every apply waits for the guard), and raises nothing
    here, so that the guard's error, the first of the whole, is the one raised.
    """
    block, values = _joined(indices, axis), _joined(updates, axis)
    starts, size, width = spans
    target = block.reshape(-1).astype(np.int64, copy=False)
    lengths = np.diff(np.append(starts, size))
    largest = int(lengths.max()) * math.prod(block_shape)
    kind = np.int32 if largest < 2**31 else np.int64
    flat = values.reshape(-1)
    if block.ndim == 1:
        ran = by_destination(target, flat, starts, (size, width), (kind, False))
        flat = ran.local
    else:
        ran = by_destination(target, flat, starts, (size, width), (np.int64, True))
        dest = np.repeat(np.arange(ran.counts.size), ran.counts)
        flat = _flat(ran.local, (dest, ran.order), block.shape, lengths, axis, block_shape)
        flat = flat.astype(kind)
    values, counts = ran.values, ran.counts
    bad = None if ran.clean else first_bad(block, *place, size)
    ends = np.cumsum(counts)
    pieces = {
        k: [(flat[ends[k] - counts[k] : ends[k]], values[ends[k] - counts[k] : ends[k]])]
        for k in np.flatnonzero(counts).tolist()
    }
    return Split(pieces, bad)


def bad(made: Split) -> BadIndex | None:
    """A split's first bad index: a small task beside it, for the bounds guard's tree."""
    return made.bad


def _joined(blocks: list[Array], axis: int) -> Array:
    if len(blocks) == 1:
        return blocks[0]
    return np.concatenate(blocks, axis=axis, dtype=blocks[0].dtype)  # keeps byte order


def _flat(
    local: Array,
    sorted_by: tuple[Array, Array],
    shape: tuple[int, ...],
    lengths: Array,
    axis: int,
    block_shape: tuple[int, ...],
) -> Array:
    """The flat positions (C order) in their blocks of data of the elements of a block of
    indices of ``shape``, sorted: from their places ``local`` along the axis, in blocks
    ``dest``, ``order`` their places in the block of indices (``sorted_by``)."""
    dest, order = sorted_by
    coords = np.unravel_index(order, shape)
    before = np.ravel_multi_index(coords[:axis], block_shape[:axis]) if axis else 0
    after_shape = block_shape[axis + 1 :]
    after = np.ravel_multi_index(coords[axis + 1 :], after_shape) if after_shape else 0
    return (before * lengths[dest] + local) * math.prod(after_shape) + after


def merge(digit: int, placed: int, base: int, *lanes: Lane | Split) -> Lane:
    """The pieces whose destination has ``digit`` at place ``placed`` (a power of
    ``base``), from ``lanes`` (or splits) in ascending order of origin, listed in that order
    (not joined: only the apply joins them, once). With one lane: its share for one reader
    of the next stage (on a cluster, so that only that share travels to it)."""
    joined: Lane = {}
    for lane in lanes:
        held = lane.pieces if isinstance(lane, Split) else lane
        for dest, pieces in held.items():
            if dest // placed % base == digit:
                joined.setdefault(dest, []).extend(pieces)
    return joined


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
    *lanes: Lane | Split,
) -> Any:
    """The last stage of lane ``dest`` (the pieces of ``lanes`` aimed at block ``dest``
    joined, as :func:`merge` joins them), and block ``dest`` of data with them applied, in
    order: one flat call. ``checked`` is the bounds guard's value (None): it orders this
    task after it, so every position is in the block."""
    pieces = merge(digit, placed, base, *lanes).get(dest)
    if pieces is None:
        return copied(block, axis, reduction)
    positions, values = _join(pieces)
    flat = scatter_block(block.reshape(-1), positions, values, 0, reduction)
    return flat.reshape(block.shape)


def split_requests(
    indices: list[Array],
    origin: int,
    axis: int,
    spans: tuple[Array, int, int],
    block_shape: tuple[int, ...],
    place: tuple[tuple[int, ...], tuple[int, ...]],
) -> Split:
    """A gather's split: the run ``origin`` of blocks of indices, as :func:`split` splits a
    scatter's, with each element's place in the run (C order) in place of an update, and
    the run's number on each piece, for the way back."""
    block = _joined(indices, axis)
    kind = np.int32 if block.size < 2**31 else np.int64
    order = np.arange(block.size, dtype=kind).reshape(block.shape)
    made = split([block], [order], axis, spans, block_shape, place)
    pieces = {k: [(*piece, origin) for piece in held] for k, held in made.pieces.items()}
    return Split(pieces, made.bad)


def read(
    block: Array, checked: None, dest: int, digit: int, placed: int, base: int, *lanes: Lane | Split
) -> Lane:
    """The last stage of lane ``dest`` of a gather's requests: the elements they ask for,
    read from block ``dest`` of data with one flat call, as pieces for the way back, each to
    the run that asked. ``checked`` is the bounds guard's value (None), as for
    :func:`applied`."""
    requests: list[Request] = merge(digit, placed, base, *lanes).get(dest, [])
    if not requests:
        return {}
    positions = np.concatenate([r[0] for r in requests]) if len(requests) > 1 else requests[0][0]
    elements = gather_block(block.reshape(-1), positions, 0)
    ends = np.cumsum([r[0].size for r in requests]).tolist()
    return {
        origin: [(order, elements[end - order.size : end])]
        for (_, order, origin), end in zip(requests, ends, strict=True)
    }


def answered(
    shape: tuple[int, ...],
    dtype: np.dtype[Any],
    origin: int,
    digit: int,
    placed: int,
    base: int,
    *lanes: Lane,
) -> Array:
    """The last stage of the way back to run ``origin`` of a gather (of ``shape``): the
    elements its requests read, each put at its place in the run. Every place receives one
    (each index lies in one block of data, the guard having checked them)."""
    answers: list[Answer] = merge(digit, placed, base, *lanes).get(origin, [])
    out = np.empty(math.prod(shape), dtype)
    for order, elements in answers:
        out[order] = elements
    return out.reshape(shape)


def part(run: Array, axis: int, low: int, high: int) -> Array:
    """The block of a gather's result at ``[low, high)`` along the axis of its run."""
    return run[(slice(None),) * axis + (slice(low, high),)]
