"""How the blocks of a lazy scatter line up: the chunks of indices and updates.

The result has data's chunks. Updates that meet at one element differ only in their axis
coordinate, so each block of the result reads the updates of its own *columns*: the
positions off the axis that it covers. Indices and updates are rechunked off the axis to
data's chunks (cut where they end, since they may be shorter than data there), and along
the axis into the fewest pieces that keep one block of indices no larger than the largest
block of the three inputs: each piece is one task of a column's fold, which copies its
block of the result once, so small chunks along the axis are merged.

Data chunked along the axis is routed to (:mod:`scatterx_dask._lanes`), unless a column of
it, the axis whole, is no larger than the largest block of the three inputs: then it is put
whole along the axis first (:func:`merged_along`), one copy of data, for the folds above.
"""

from __future__ import annotations

import math
from typing import NamedTuple

Chunks = tuple[tuple[int, ...], ...]


class Plan(NamedTuple):
    """The chunks of indices and updates for a scatter into data's chunks."""

    index_chunks: Chunks  # for indices and updates, rechunked
    columns: tuple[int, ...]  # per dimension: data's blocks that updates reach (axis: all)


def cut(sizes: tuple[int, ...], length: int) -> tuple[int, ...]:
    """``sizes`` (data's chunks on a dimension) cut to the first ``length`` positions."""
    pieces: list[int] = []
    left = length
    for size in sizes:
        if left <= 0:
            break
        pieces.append(min(size, left))
        left -= pieces[-1]
    return tuple(pieces)


def _largest_block(chunks: Chunks) -> int:
    return math.prod(max(sizes, default=0) for sizes in chunks)


def _split(sizes: tuple[int, ...], most: int) -> tuple[int, ...]:
    """``sizes`` with each chunk longer than ``most`` split into pieces of ``most`` (the last
    one shorter)."""
    pieces: list[int] = []
    for size in sizes:
        whole, rest = divmod(size, most)
        pieces.extend([most] * whole)
        if rest:
            pieces.append(rest)
    return tuple(pieces)


#: Whether data chunked along the axis may be put whole along it (:func:`merged_along`);
#: the tests of the route turn it off.
MERGE_ALONG = True


def merged_along(data: Chunks, indices: Chunks, updates: Chunks, axis: int) -> bool:
    """Whether data, chunked along the axis, is put whole along it rather than routed to: a
    column of it (the axis whole, data's largest chunk on every other dimension) holds no
    more elements than the largest block of the three inputs, so a task of the folds holds
    no more than a task reading the inputs does. Routing would sort every update, move it
    through the route's stages and join it again; putting data whole copies data once.
    """
    if not MERGE_ALONG or len(data[axis]) < 2:
        return False
    column = sum(data[axis]) * math.prod(max(s, default=0) for d, s in enumerate(data) if d != axis)
    return column <= max(_largest_block(data), _largest_block(indices), _largest_block(updates))


def plan(data: Chunks, indices: Chunks, updates: Chunks, axis: int) -> Plan:
    """The chunks for indices and updates (of non-empty shape) against data's chunks."""
    shape = tuple(sum(sizes) for sizes in indices)
    chunks = [sizes if d == axis else cut(data[d], shape[d]) for d, sizes in enumerate(data)]
    row = math.prod(max(sizes) for d, sizes in enumerate(chunks) if d != axis)
    budget = max(_largest_block(data), _largest_block(indices), _largest_block(updates))
    chunks[axis] = _split((shape[axis],), max(1, budget // max(row, 1)))
    columns = tuple(len(data[d]) if d == axis else len(c) for d, c in enumerate(chunks))
    return Plan(tuple(chunks), columns)
