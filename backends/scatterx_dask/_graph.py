"""The task graphs of a lazy scatter and gather: a bounds guard, then one fold per block.

Scatter. A block of the result that no update reaches is a copy of data's block. With data
whole along the axis, every other block is a chain of tasks folding the blocks of updates
of its columns into data's block, in ascending axis order (the order of the contract), each
task one in-memory call. With data in ``K`` blocks along the axis, each run of blocks of
updates (see :func:`_runs`) is split once by destination and the pieces routed to their
blocks through a butterfly of fan-in at most :data:`ROUTE_FAN_IN` (dask's task-based
shuffle; see :mod:`scatterx_dask._route`), in axis order; the last stage's task of each
block joins them and applies them with one flat call.

Gather. Each block of the result (a block of indices, lined up with data's columns) reads
the blocks of data of its columns: one in-memory call where data is whole along the axis,
else a chain over data's blocks along the axis, each task filling in the elements whose
indices fall in its block of data. Each holds one block of the result, one of indices and
one of data at a time.

Before any chain starts (unless one in-memory call reads every index: it checks them
itself), a guard checks every index against the axis's bounds, on a
clone of the indices' graph (so that no block of indices waits in memory for the
chains): its tasks find the first bad index of a few blocks each, a tree of small tasks the first of
all, and the guard raises the contract's IndexError for it. Every block of the result that
reads indices waits for the guard, so any computation of such blocks (the whole result or
a part) reads every index once more, and raises for the first bad index of the whole, in
C order; a block of a scatter that no update reaches reads no index and raises nothing.

Tasks: at most one per block of indices for the guard (and its tree, a few percent more).
A scatter with data whole along the axis: one per block of indices (and updates). With
``R`` blocks of updates along the axis and ``K`` of data, per column: ``L`` splits (about
``min(R, K)``, at least ``R / ROUTE_FAN_IN``), about ``max(L, K)`` per stage of the
butterfly over ``ceil(log_F max(L, K))`` stages (``K`` in the last, which applies):
``O((R + K) log(R + K))``. A gather with data in ``K`` chunks along the axis reads every
block of data along the axis for each block of indices: ``K`` tasks per block.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from scatterx.backend import GatherRequest, ScatterRequest

from . import _route, _tasks
from ._plan import Plan

#: How many blocks' first bad indices one task of the guard's tree takes.
FAN_IN = 32

#: A task of the guard checks several blocks of indices while they hold fewer elements.
_SMALL_CHECK = 1 << 16

#: The most lanes one task of the routing butterfly reads (dask's shuffle's max branch).
ROUTE_FAN_IN = 32

#: The most updates a split reads from several blocks beyond the ones it needs to read to
#: make as many lanes as data has blocks along the axis (small blocks: fewer tasks).
SMALL_RUN = 1 << 16


def _starts(sizes: tuple[int, ...]) -> list[int]:
    return list(itertools.accumulate(sizes, initial=0))[:-1]


def _spans(axis_chunks: tuple[int, ...], size: int) -> list[tuple[int, int, int]]:
    """``(low, high, size)`` of each of data's chunks along an axis of ``size``."""
    starts = _starts(axis_chunks)
    return [(lo, lo + n, size) for lo, n in zip(starts, axis_chunks, strict=True)]


def _guard(graph: dict[Any, Any], name: str, indices: Any, axis: int, size: int) -> str:
    """Add the guard's tasks for ``indices`` (a clone); return the guard's key."""
    starts = [_starts(sizes) for sizes in indices.chunks]
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
            graph[key] = (_tasks.first_bad_of, list(keys), offsets, indices.shape, size)
            level.append(key)
            group, held = [], 0
    return _tree(graph, name, level, axis, size)


def _tree(graph: dict[Any, Any], name: str, level: list[Any], axis: int, size: int) -> str:
    """Add a tree of :data:`FAN_IN` to a node over the tasks ``level`` (each a first bad
    index or None, of its part of indices) and the guard that raises for the first of all;
    return the guard's key."""
    depth = 0
    while len(level) > 1:
        depth += 1
        groups = [level[i : i + FAN_IN] for i in range(0, len(level), FAN_IN)]
        level = [(f"{name}-earliest-{depth}", i) for i in range(len(groups))]
        for key, group in zip(level, groups, strict=True):
            graph[key] = (_tasks.earliest, *group)
    guard = f"{name}-guard"
    graph[guard] = (_tasks.guard, level[0], axis, size)
    return guard


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
) -> dict[Any, Any]:
    """The graph's new tasks: the result's blocks are ``(name, *block)``.

    ``arrays`` are indices and updates rechunked as ``lined_up`` (see
    :func:`scatterx_dask._plan.plan`) says;
    ``clone`` is a clone of the user's indices, for the guard of data whole along the axis;
    None where no guard is needed (see :func:`needs_guard`) or data is chunked along the
    axis (the splits check the indices they read: see :func:`_routed`). ``shares``: the
    route's lanes travel as one share per reader (see :func:`_routed`).
    """
    data, axis, size = request.data, request.axis, request.axis_size
    graph: dict[Any, Any] = {}
    routed = data.numblocks[axis] > 1
    guard = f"{name}-guard" if routed else None
    if clone is not None and not routed:
        guard = _guard(graph, name, clone, axis, size)
    found: list[Any] = []
    indices, updates = arrays
    columns = lined_up.columns
    for block in itertools.product(*(range(n) for n in data.numblocks)):
        if any(block[d] >= columns[d] for d in range(data.ndim) if d != axis):
            graph[(name, *block)] = (_tasks.copied, (data.name, *block), axis, request.reduction)
    for column in itertools.product(
        *(range(n) if d != axis else [0] for d, n in enumerate(columns))
    ):
        if data.numblocks[axis] == 1:
            _fold(
                graph,
                request,
                name,
                (indices.name, updates.name, indices.numblocks[axis]),
                column,
                guard,
            )
        else:
            found += _routed(graph, request, name, (indices, updates), column, (guard, shares))
    if routed:
        _tree(graph, name, found, axis, size)
    return graph


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


def _width(chunks: tuple[int, ...]) -> int:
    """The length of every chunk but the last, where the last is no longer; else 0."""
    first = chunks[0]
    same = all(n == first for n in chunks[:-1]) and chunks[-1] <= first
    return first if same else 0


def _runs(sizes: tuple[int, ...], targets: int, across: int) -> list[range]:
    """The blocks of updates along the axis that each split reads: runs of consecutive
    blocks (of ``sizes`` along the axis, ``across`` elements off it), at most
    :data:`ROUTE_FAN_IN` of them, as many as needed for about as many runs as data's
    ``targets`` blocks along the axis, or more while the run holds at most
    :data:`SMALL_RUN` updates: fewer tasks in the butterfly, and a task's memory bounded
    by ``ROUTE_FAN_IN`` blocks of updates (or ``SMALL_RUN`` of them)."""
    least = max(1, min(ROUTE_FAN_IN, len(sizes) // targets))
    runs: list[range] = []
    low, held = 0, 0
    for row, size in enumerate(sizes):
        count = row - low
        if count == ROUTE_FAN_IN or (count >= least and held + size * across > SMALL_RUN):
            runs.append(range(low, row))
            low, held = row, 0
        held += size * across
    return [*runs, range(low, len(sizes))]


def _routed(
    graph: dict[Any, Any],
    request: ScatterRequest,
    name: str,
    arrays: tuple[Any, Any],
    column: tuple[int, ...],
    after: tuple[str | None, bool],
) -> list[Any]:
    """One column, data in ``K`` blocks along the axis: each block of updates split by
    destination, the pieces routed through a butterfly of fan-in at most
    :data:`ROUTE_FAN_IN` (see :mod:`scatterx_dask._route`), one flat call per block, after
    the guard (``after``: its key, and whether lanes travel as shares). Returns the keys of
    the splits' first bad indices, for the guard's tree.

    With shares (on a cluster), each lane of a stage is read by the tasks of the next
    through one small task per reader that takes the reader's share of it (a
    :func:`~scatterx_dask._route.merge` of one lane), as dask's task shuffle does with
    ``getitem``: a worker then receives only the updates bound for its own tasks, not
    every lane whole, about half the bytes on two workers; more tasks, none copying. Only
    where a split holds :data:`SMALL_RUN` updates or more on average: a task costs a
    cluster about a millisecond, more than sending a small lane whole to each reader.
    """
    data, axis = request.data, request.axis
    indices, updates = arrays
    guard, shares = after
    offsets = [_starts(sizes) for sizes in indices.chunks]
    targets = data.numblocks[axis]
    starts = np.asarray(_starts(data.chunks[axis]), dtype=np.int64)
    spans = (starts, request.axis_size, _width(data.chunks[axis]))
    shape = tuple(1 if d == axis else data.chunks[d][i] for d, i in enumerate(column))
    here = column[:axis], column[axis + 1 :]

    def at(row: int) -> tuple[int, ...]:
        return (*here[0], row, *here[1])

    across = math.prod(n for d, n in enumerate(shape) if d != axis)
    runs = _runs(indices.chunks[axis], targets, across)
    origins = len(runs)
    shares = shares and sum(indices.chunks[axis]) * across >= SMALL_RUN * origins
    lanes, found = {}, []
    for origin, run in enumerate(runs):
        key = (f"{name}-split", *at(origin))
        parts = ([(a.name, *at(row)) for row in run] for a in (indices, updates))
        corner = tuple(offsets[d][i] for d, i in enumerate(at(run.start)))
        place = (corner, indices.shape)
        graph[key] = (_route.split, *parts, axis, spans, shape, place)
        lanes[origin] = key
        found.append((f"{name}-bad", *at(origin)))
        graph[found[-1]] = (_route.bad, key)
    count, base = _route.stages(origins, targets, ROUTE_FAN_IN)
    for stage in range(count):
        placed, wider = base**stage, base ** (stage + 1)
        now = {}
        for lane in range(base**count):
            if not _route.exists(lane, wider, origins, targets):
                continue
            digit = lane // placed % base
            sources = [lane + (t - digit) * placed for t in range(base)]
            inputs = [lanes[j] for j in sources if j in lanes]
            if shares:
                inputs = [
                    _share(graph, (name, stage, digit), lanes[j], placed, base)
                    for j in sources
                    if j in lanes
                ]
            merged = (digit, placed, base, *inputs)
            if stage < count - 1:
                key = (f"{name}-route-{stage}", *at(lane))
                graph[key] = (_route.merge, *merged)
            else:  # lane ``k`` of the last stage: block ``k`` of data, its updates applied
                key = (name, *at(lane))
                block = (request.data.name, *at(lane))
                graph[key] = (_route.applied, block, guard, lane, axis, request.reduction, *merged)
            now[lane] = key
        lanes = now
    return found


def _share(
    graph: dict[Any, Any], reader: tuple[str, int, int], lane: Any, placed: int, base: int
) -> Any:
    """The key of a task taking, of ``lane``, the share of the stage's readers with
    ``digit`` at place ``placed``."""
    name, stage, digit = reader
    key = (f"{name}-share-{stage}", *lane[1:], digit)
    graph[key] = (_route.merge, digit, placed, base, lane)
    return key


def gather_tasks(request: GatherRequest, name: str, indices: Any, clone: Any) -> dict[Any, Any]:
    """The graph's new tasks for a gather: the result's blocks are ``(name, *block)``.

    ``indices`` are the user's rechunked as :func:`scatterx_dask._plan.plan` says: off the
    axis, block ``b`` of them lies in block ``b`` of data, and starts where it starts.
    ``clone`` is as for :func:`tasks`.
    """
    data, axis, size = request.data, request.axis, request.axis_size
    graph: dict[Any, Any] = {}
    guard = None if clone is None else _guard(graph, name, clone, axis, size)
    spans = _spans(data.chunks[axis], size)
    for block in itertools.product(*(range(n) for n in indices.numblocks)):
        index = (indices.name, *block)
        if 0 in (indices.chunks[d][i] for d, i in enumerate(block)):
            # cut at an empty chunk of data off the axis: no data to read, no index to check
            graph[(name, *block)] = (_tasks.gathered_nothing, index, data.dtype)
            continue
        state: Any = None
        for row, span in enumerate(spans):
            key = (name, *block) if row == len(spans) - 1 else (f"{name}-fold-{row}", *block)
            source = (data.name, *block[:axis], row, *block[axis + 1 :])
            checked = guard if row == 0 else None
            if len(spans) == 1:
                graph[key] = (_tasks.gather_step, source, index, checked, axis)
            else:
                graph[key] = (_tasks.gather_within, state, source, index, checked, axis, span)
            state = key
    return graph
