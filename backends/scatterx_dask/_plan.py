"""How the blocks of a lazy scatter line up: the chunks of indices and updates.

The result has data's chunks. Updates that meet at one element differ only in their axis
coordinate, so each block of the result reads the updates of its own *columns*: the
positions off the axis that it covers. Indices and updates are rechunked off the axis to
data's chunks (cut where they end, since they may be shorter than data there), and along
the axis into the fewest pieces that keep one block of indices no larger than the largest
block of the three inputs: each piece is one task of a column's fold, which copies its
block of the result once, so small chunks along the axis are merged.
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


def plan(data: Chunks, indices: Chunks, updates: Chunks, axis: int) -> Plan:
    """The chunks for indices and updates (of non-empty shape) against data's chunks."""
    shape = tuple(sum(sizes) for sizes in indices)
    chunks = [sizes if d == axis else cut(data[d], shape[d]) for d, sizes in enumerate(data)]
    row = math.prod(max(sizes) for d, sizes in enumerate(chunks) if d != axis)
    budget = max(_largest_block(data), _largest_block(indices), _largest_block(updates))
    chunks[axis] = _split((shape[axis],), max(1, budget // max(row, 1)))
    columns = tuple(len(data[d]) if d == axis else len(c) for d, c in enumerate(chunks))
    return Plan(tuple(chunks), columns)
