"""The task graphs of a lazy scatter and gather: a bounds guard, then the blocks' tasks.

Scatter. A block of the result that no update reaches is a copy of data's block. With data
whole along the axis, every other block is a chain of tasks folding the blocks of updates
of its columns into data's block, in ascending axis order (the order of the contract), each
task one in-memory call. With data in ``K`` blocks along the axis, the updates are routed
to their blocks of data, as a shuffle routes rows (:mod:`scatterx_dask._lanes`).

Gather. Each block of the result (a block of indices, lined up with data's columns) reads
the blocks of data of its columns: one in-memory call where data is whole along the axis;
else the requests are routed to the blocks of data, and the elements read back to the
blocks of the result (:mod:`scatterx_dask._lanes`).

With data whole along the axis (unless one in-memory call reads every index: it checks
them itself), a guard checks every index against the axis's bounds before any block is
made, on a clone of the indices' graph (so that no block of indices waits in memory for
the chains): its tasks find the first bad index of a few blocks each, a tree of small
tasks the first of all, and the guard raises the contract's IndexError for it. Where the
result is small (``scatterx_dask._run._self_checked``), a scatter's chains check their own
indices instead, with the in-memory calls they make anyway (no second pass over the
indices), and each block of the result waits for the guard over all of their findings.
With data chunked along the axis the splits of the route read every index anyway, and the
same tree takes their first bad indices. Every block of the result that reads indices waits for the
guard, so any computation of such blocks (the whole result or a part) reads every index,
and raises for the first bad index of the whole, in C order; a block of a scatter that no
update reaches reads no index and raises nothing.

Tasks: at most one per block of indices for the guard (and its tree, a few percent more).
With data whole along the axis, one per block of indices (and updates). With data in
``K`` blocks along the axis and indices in ``R``: ``O((R + K) log(R + K))`` per column
(see :mod:`scatterx_dask._lanes`), not ``R x K``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

from scatterx.backend import GatherRequest, ScatterRequest

from . import _lanes, _tasks
from ._plan import Plan

#: How many blocks' first bad indices one task of the guard's tree takes.
FAN_IN = 32

#: A task of the guard checks several blocks of indices while they hold fewer elements.
_SMALL_CHECK = 1 << 16


class Bounds(NamedTuple):
    """What a guard checks: each index against the bounds of one axis (ScatterElements),
    or each row of a ScatterND's indices against the dimensions its columns index."""

    axis: int  # the axis; for rows, the dimension of data that their first column indexes
    size: Any  # its size; for rows, the sizes of the dimensions they index
    first_bad_of: Callable[..., Any] = _tasks.first_bad_of  # a task: blocks' first bad index
    guard: Callable[..., None] = _tasks.guard  # a task: raise for the first bad index


def guard_of(graph: dict[Any, Any], name: str, indices: Any, bounds: Bounds) -> str:
    """Add the tasks of a guard of ``bounds`` for ``indices`` (a clone, of at least one
    block); return the guard's key."""
    starts = [_lanes.starts(sizes) for sizes in indices.chunks]
    level: list[Any] = []
    group: list[tuple[Any, tuple[int, ...]]] = []
    held = 0
    blocks = list(itertools.product(*(range(n) for n in indices.numblocks)))
    for number, block in enumerate(blocks):
        group.append(((indices.name, *block), tuple(starts[d][i] for d, i in enumerate(block))))
        held += math.prod(indices.chunks[d][i] for d, i in enumerate(block))
        if len(group) == FAN_IN or held >= _SMALL_CHECK or number == len(blocks) - 1:
            key = (f"{name}-check", len(level))
            keys, offsets = zip(*group, strict=True)
            graph[key] = (bounds.first_bad_of, list(keys), offsets, indices.shape, bounds.size)
            level.append(key)
            group, held = [], 0
    return _tree(graph, name, level, bounds.axis, bounds.size, bounds.guard)


def _guard_of(
    graph: dict[Any, Any], name: str, clone: Any, routed: bool, where: tuple[int, int]
) -> str | None:
    """The key of the guard that the blocks reading indices wait for: with data chunked
    along the axis (``routed``), the one that the splits' tree ends in (added once the
    splits are); else the guard of ``clone`` (added here), or None where none is needed."""
    if routed:
        return f"{name}-guard"
    return None if clone is None else guard_of(graph, name, clone, Bounds(*where))


def _tree(
    graph: dict[Any, Any],
    name: str,
    level: list[Any],
    axis: int,
    size: Any,
    guard: Callable[..., None] = _tasks.guard,
) -> str:
    """Add a tree of :data:`FAN_IN` to a node over the tasks ``level`` (each a first bad
    index or None, of its part of indices) and the guard that raises for the first of all
    (the task ``guard``, given that index, ``axis`` and ``size``); return the guard's key."""
    depth = 0
    while len(level) > 1:
        depth += 1
        groups = [level[i : i + FAN_IN] for i in range(0, len(level), FAN_IN)]
        level = [(f"{name}-earliest-{depth}", i) for i in range(len(groups))]
        for key, group in zip(level, groups, strict=True):
            graph[key] = (_tasks.earliest, *group)
    key = f"{name}-guard"
    graph[key] = (guard, level[0], axis, size)
    return key


def needs_guard(data: Any, indices: Any, axis: int) -> bool:
    """Whether the result needs the guard: unless one in-memory call reads every index.

    That call, with data not chunked along the axis and one block of indices (rechunked),
    checks the bounds itself and raises for the first bad index of the whole (its block
    starts at the origin); every other block of a scatter's result reads no index, and a
    gather's result has no other block.
    """
    return bool(data.numblocks[axis] > 1 or math.prod(indices.numblocks) > 1)


def tasks(
    request: ScatterRequest,
    name: str,
    lined_up: Plan,
    arrays: tuple[Any, Any],
    clone: Any,
    shares: bool = False,
    self_checked: bool = False,
) -> dict[Any, Any]:
    """The graph's new tasks: the result's blocks are ``(name, *block)``.

    ``arrays`` are indices and updates rechunked as ``lined_up`` (see
    :func:`scatterx_dask._plan.plan`) says;
    ``clone`` is a clone of the user's indices, for the guard of data whole along the axis;
    None where no guard is needed (see :func:`needs_guard`) or data is chunked along the
    axis (the splits check the indices they read: see :mod:`scatterx_dask._lanes`).
    ``shares``: the route's lanes may travel as one share per reader (on a cluster: see
    :func:`scatterx_dask._lanes.butterfly`).
    ``self_checked``: data whole along the axis, the chains' in-memory calls check their
    own indices and a guard over their findings orders every block of the result that
    they make after all of them (see :func:`_fold_checked`), in place of a guard's pass.
    """
    data, axis, size = request.data, request.axis, request.axis_size
    graph: dict[Any, Any] = {}
    routed = data.numblocks[axis] > 1
    guard = _guard_of(graph, name, clone, routed, (axis, size))
    found: list[Any] = []
    indices, updates = arrays
    columns = lined_up.columns
    for block in itertools.product(*(range(n) for n in data.numblocks)):
        if any(block[d] >= columns[d] for d in range(data.ndim) if d != axis):
            graph[(name, *block)] = (_tasks.copied, (data.name, *block), axis, request.reduction)
    for column in itertools.product(
        *(range(n) if d != axis else [0] for d, n in enumerate(columns))
    ):
        if self_checked:
            found.append(_fold_checked(graph, request, name, arrays, column))
        elif data.numblocks[axis] == 1:
            _fold(
                graph,
                request,
                name,
                (indices.name, updates.name, indices.numblocks[axis]),
                column,
                guard,
            )
        else:
            found += _lanes.scattered(graph, request, name, arrays, column, (guard, shares))
    if routed or self_checked:
        _tree(graph, name, found, axis, size)
    return graph


def _fold_checked(
    graph: dict[Any, Any],
    request: ScatterRequest,
    name: str,
    arrays: tuple[Any, Any],
    column: tuple[int, ...],
) -> tuple[Any, ...]:
    """The chain of one column, data whole along the axis, with no guard before it: each
    task is one in-memory call that checks its own block of indices
    (:func:`scatterx_dask._tasks.step_checked`). The column's block of the result waits
    for the guard over every chain's first bad index (the tree that ends in
    ``{name}-guard``), so any part of the result raises for the first of the whole. Return
    the key of the chain's first bad index, for that tree.
    """
    axis, size = request.axis, request.axis_size
    indices, updates = arrays
    offsets = [_lanes.starts(sizes) for sizes in indices.chunks]
    state: Any = (request.data.name, *column)
    for row in range(indices.numblocks[axis]):
        part = (*column[:axis], row, *column[axis + 1 :])
        key = (f"{name}-fold-{row}", *column)
        at = (tuple(offsets[d][i] for d, i in enumerate(part)), indices.shape, size)
        blocks = ((indices.name, *part), (updates.name, *part))
        graph[key] = (_tasks.step_checked, state, *blocks, at, axis, request.reduction)
        state = key
    graph[(name, *column)] = (_tasks.block_of, state, f"{name}-guard")
    bad = (f"{name}-bad", *column)
    graph[bad] = (_tasks.bad_of, state)
    return bad


def _fold(
    graph: dict[Any, Any],
    request: ScatterRequest,
    name: str,
    arrays: tuple[str, str, int],
    column: tuple[int, ...],
    guard: str | None,
) -> None:
    """The chain of one column, data whole along the axis: one task per block of updates,
    in ascending axis order."""
    axis = request.axis
    indices, updates, rows = arrays
    state: Any = (request.data.name, *column)
    for row in range(rows):
        part = (*column[:axis], row, *column[axis + 1 :])
        key = (name, *column) if row == rows - 1 else (f"{name}-fold-{row}", *column)
        checked = guard if row == 0 else None
        args = ((indices, *part), (updates, *part), checked, axis, request.reduction)
        graph[key] = (_tasks.step, state, *args)
        state = key


def gather_tasks(
    request: GatherRequest, name: str, indices: Any, clone: Any, shares: bool = False
) -> dict[Any, Any]:
    """The graph's new tasks for a gather: the result's blocks are ``(name, *block)``.

    ``indices`` are the user's rechunked as :func:`scatterx_dask._plan.plan` says: off the
    axis, block ``b`` of them lies in block ``b`` of data, and starts where it starts.
    ``clone`` and ``shares`` are as for :func:`tasks`.
    """
    data, axis, size = request.data, request.axis, request.axis_size
    graph: dict[Any, Any] = {}
    routed = data.numblocks[axis] > 1
    guard = _guard_of(graph, name, clone, routed, (axis, size))
    found: list[Any] = []
    columns = (range(n) if d != axis else [0] for d, n in enumerate(indices.numblocks))
    for column in itertools.product(*columns):
        # cut at an empty chunk of data off the axis: no data to read, no index to check
        empty = 0 in (indices.chunks[d][i] for d, i in enumerate(column) if d != axis)
        if routed and not empty:
            found += _lanes.gathered(graph, request, name, indices, column, (guard, shares))
            continue
        for row in range(indices.numblocks[axis]):
            block = (*column[:axis], row, *column[axis + 1 :])
            index = (indices.name, *block)
            if empty:
                graph[(name, *block)] = (_tasks.gathered_nothing, index, data.dtype)
            else:
                graph[(name, *block)] = (
                    _tasks.gather_step,
                    (data.name, *column),
                    index,
                    guard,
                    axis,
                )
    if routed:
        _tree(graph, name, found, axis, size)
    return graph
