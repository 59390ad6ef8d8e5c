"""The functions that the tasks of a lazy scatter or gather run, block by block.

Every function here is at module level, so that a ``distributed`` worker can unpickle it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from scatterx.backend import (
    block_call,
    block_gather,
    check_string_values,
    first_bad_row_index,
    out_of_bounds_error,
    row_index_error,
    row_positions,
)

from ._cores import run_on_numba

Array = np.ndarray[Any, Any]


class BadIndex(NamedTuple):
    """An index out of bounds: its flat position in C order, its value, its position."""

    flat: int
    value: int
    position: tuple[int, ...]


def first_bad(
    block: Array, offsets: tuple[int, ...], shape: tuple[int, ...], size: int
) -> BadIndex | None:
    """The first index of ``block`` (in C order) outside ``[-size, size-1]``, or None.

    ``offsets`` place the block in indices of ``shape``: C order within a block is the
    order of the whole restricted to it, so the block's first is its first in the whole.
    """
    if block.size == 0 or (int(block.min()) >= -size and int(block.max()) < size):
        return None
    bad = (block < -size) | (block >= size)
    local = np.unravel_index(int(np.argmax(bad)), block.shape)
    position = tuple(int(i) + o for i, o in zip(local, offsets, strict=True))
    flat = int(np.ravel_multi_index(position, shape))
    return BadIndex(flat, int(block[local]), position)


def first_bad_of(
    blocks: list[Array], offsets: tuple[tuple[int, ...], ...], shape: tuple[int, ...], size: int
) -> BadIndex | None:
    """The first index (in C order) outside ``[-size, size-1]`` of several blocks, each
    placed at its ``offsets`` (as for :func:`first_bad`), or None."""
    found = (first_bad(b, o, shape, size) for b, o in zip(blocks, offsets, strict=True))
    return earliest(*found)


def earliest(*found: BadIndex | None) -> BadIndex | None:
    """The first in C order of several blocks' first bad indices."""
    bad = [b for b in found if b is not None]
    return min(bad) if bad else None


def guard(found: BadIndex | None, axis: int, size: int) -> None:
    """Raise the contract's IndexError for the first bad index of the whole indices."""
    if found is not None:
        raise out_of_bounds_error(found.value, found.position, axis, size)


def scatter_block(state: Array, indices: Array, updates: Array, axis: int, reduction: str) -> Any:
    """One in-memory call, on the backend scatterx chooses for the blocks (numba on the
    cores this task can take now: see :mod:`scatterx_dask._cores`)."""
    name, run = block_call(state, indices, updates, axis, reduction)
    return run_on_numba(run) if name == "numba" else run()


def step(
    state: Array, indices: Array, updates: Array, checked: None, axis: int, reduction: str
) -> Any:
    """Fold one block of updates into a block of the result that spans the whole axis.

    ``checked`` is the bounds guard's value (None): it only orders this task after it.
    """
    return scatter_block(state, indices, updates, axis, reduction)


class Folded(NamedTuple):
    """A block of the result so far, checked by its own calls: the first bad index of the
    blocks of indices folded into it (their calls scatter nothing once one is found)."""

    block: Any
    bad: BadIndex | None


def step_checked(
    state: Any, indices: Array, updates: Array, where: tuple[Any, ...], axis: int, reduction: str
) -> Folded:
    """:func:`step`, its own in-memory call checking the bounds in place of a guard.

    ``state`` is data's block or the :class:`Folded` of the step before; ``where`` the
    block's offsets, the shape of the whole indices and the axis's size: an IndexError of
    the call becomes the block's first bad index in the whole (C order), and the later
    steps of the chain only look for an earlier one in their blocks.
    """
    earlier = None
    if isinstance(state, Folded):
        state, earlier = state
    if earlier is None:
        try:
            return Folded(scatter_block(state, indices, updates, axis, reduction), None)
        except IndexError:
            bad = first_bad(indices, *where)
            if bad is None:  # not the bounds': the call's own error
                raise
            return Folded(state, bad)
    return Folded(state, earliest(earlier, first_bad(indices, *where)))


def bad_of(folded: Folded) -> BadIndex | None:
    """The first bad index that a chain of :func:`step_checked` found, or None."""
    return folded.bad


def block_of(folded: Folded, checked: None) -> Any:
    """The block a chain of :func:`step_checked` made, once every chain's bad index was
    looked at by the guard (whose value is ``checked``)."""
    return folded.block


def copied(block: Array, axis: int, reduction: str) -> Any:
    """A block of data, through an in-memory call with no update: as every backend copies
    data (bool normalised to 0 and 1, say)."""
    nothing = np.zeros((0,) * block.ndim, np.int64)
    return scatter_block(block, nothing, nothing.astype(block.dtype), axis, reduction)


def gather_block(data: Array, indices: Array, axis: int) -> Any:
    """One in-memory gather, on the backend scatterx chooses for the blocks (numba on the
    cores this task can take now, as for :func:`scatter_block`)."""
    name, run = block_gather(data, indices, axis)
    return run_on_numba(run) if name == "numba" else run()


def gather_step(data: Array, indices: Array, checked: None, axis: int) -> Any:
    """Gather a block of the result from a block of data that spans the whole axis.

    ``checked`` is the bounds guard's value (None): it only orders this task after it.
    """
    return gather_block(data, indices, axis)


def gathered_nothing(indices: Array, dtype: np.dtype[Any]) -> Array:
    """A block of an empty result: the in-memory backends' empty array of data's dtype."""
    return np.empty(indices.shape, dtype)


def strings_checked(block: Array, role: str, block_info: Any = None) -> Array:
    """A block of an object array, checked to hold str only, any error telling the position
    in the whole array (the in-memory call would tell it in the block)."""
    offsets = tuple(start for start, _ in block_info[0]["array-location"])
    check_string_values(block, role, offsets)
    return block


def first_bad_in_rows(
    block: Array, offsets: tuple[int, ...], shape: tuple[int, ...], sizes: tuple[int, ...]
) -> BadIndex | None:
    """The first index of ``block`` (in C order) of a ScatterND's or GatherND's indices
    (of ``shape``) outside the bounds of the dimension its column indexes (of ``sizes``),
    or None; ``offsets`` as for :func:`first_bad`."""
    column = offsets[-1]
    found = first_bad_row_index(block, sizes[column : column + block.shape[-1]])
    if found is None:
        return None
    local, value = found
    position = tuple(int(i) + o for i, o in zip(local, offsets, strict=True))
    return BadIndex(int(np.ravel_multi_index(position, shape)), value, position)


def first_bad_in_rows_of(
    blocks: list[Array],
    offsets: tuple[tuple[int, ...], ...],
    shape: tuple[int, ...],
    sizes: tuple[int, ...],
) -> BadIndex | None:
    """:func:`first_bad_of` for the indices of a ScatterND or GatherND."""
    found = (first_bad_in_rows(b, o, shape, sizes) for b, o in zip(blocks, offsets, strict=True))
    return earliest(*found)


def guard_rows(found: BadIndex | None, first: int, sizes: tuple[int, ...]) -> None:
    """Raise the contract's IndexError for the first bad index of a ScatterND's or
    GatherND's indices, naming the dimension of data that its column indexes (the columns
    index the dimensions from ``first``, of ``sizes``)."""
    if found is not None:
        raise row_index_error(found.value, found.position, first, sizes)


def row_positions_of(block: Array, checked: None, sizes: tuple[int, ...]) -> Array:
    """The flat position of each row of ``block`` (its last dimension whole) in the
    dimensions of ``sizes``: int64, of the shape ``block.shape[:-1]``.

    ``checked`` is the rows' guard's value (None): it orders this task after it, so every
    index is in bounds here.
    """
    positions: Array = row_positions(block, sizes, checked=True)
    return positions


def passed(block: Array, checked: None) -> Array:
    """``block`` as it is, once the guard (whose value is ``checked``) has passed."""
    return block
