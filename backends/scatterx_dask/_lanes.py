"""The routed part of a graph, with data in ``K`` blocks along the axis: splits, the
butterfly's stages and what the last stage does, for a scatter and a gather alike.

Per column (a block of data's positions off the axis), each run of consecutive blocks of
indices along the axis (see :func:`runs`) is split once by destination block of data, and
the pieces pass through a butterfly of fan-in at most :data:`ROUTE_FAN_IN` (dask's
task-based shuffle; the tasks are in :mod:`scatterx_dask._route`). A scatter's last stage
applies the updates of each block of data to it. A gather's last stage reads, from each
block of data, the elements its pieces ask for, and sends them back through a second
butterfly, from the blocks of data to the runs: each run puts its elements in place, and
its blocks of the result are slices of it. Both read every block of indices once, in a
split, which also finds the run's first bad index for the bounds guard's tree.

Tasks per column, for ``R`` blocks of indices along the axis and ``K`` of data: ``L``
splits (about ``min(R, K)``, fewer where blocks are small: see :func:`runs`; at least ``R
/ ROUTE_FAN_IN``), about ``max(L, K)`` per stage over ``ceil(log_F max(L, K))`` stages;
for a gather, twice that, and a slice per block of the result where a run holds several:
``O((R + K) log(R + K))``, not ``R x K``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from scatterx.backend import GatherRequest, ScatterRequest

from . import _route

#: The most lanes one task of the routing butterfly reads (dask's shuffle's max branch).
ROUTE_FAN_IN = 32

#: The most updates a split reads from several blocks beyond the ones it needs to read to
#: make as many lanes as data has blocks along the axis (small blocks: fewer tasks).
SMALL_RUN = 1 << 16

#: What the last stage of a butterfly makes of a lane: its key and its task, from the
#: lane's number and the arguments of :func:`scatterx_dask._route.merge` that select it.
LastStage = Callable[[int, tuple[Any, ...]], tuple[Any, Any]]

#: A split's task, from its run's number, the keys of its blocks of each array, and the
#: run's place in the whole indices (its first element's position, and their shape).
SplitTask = Callable[[int, list[list[Any]], tuple[tuple[int, ...], tuple[int, ...]]], Any]


def starts(sizes: tuple[int, ...]) -> list[int]:
    """Where each chunk of ``sizes`` starts."""
    return list(itertools.accumulate(sizes, initial=0))[:-1]


def _width(chunks: tuple[int, ...]) -> int:
    """The length of every chunk but the last, where the last is no longer; else 0."""
    first = chunks[0]
    same = all(n == first for n in chunks[:-1]) and chunks[-1] <= first
    return first if same else 0


def runs(sizes: tuple[int, ...], targets: int, across: int) -> list[range]:
    """The blocks of indices along the axis that each split reads: runs of consecutive
    blocks (of ``sizes`` along the axis, ``across`` elements off it), at most
    :data:`ROUTE_FAN_IN` of them, as many as needed for about as many runs as data's
    ``targets`` blocks along the axis, or more while the run holds at most
    :data:`SMALL_RUN` elements: fewer tasks in the butterfly, and a task's memory bounded
    by ``ROUTE_FAN_IN`` blocks of indices (or ``SMALL_RUN`` elements)."""
    least = max(1, min(ROUTE_FAN_IN, len(sizes) // targets))
    found: list[range] = []
    low, held = 0, 0
    for row, size in enumerate(sizes):
        count = row - low
        if count == ROUTE_FAN_IN or (count >= least and held + size * across > SMALL_RUN):
            found.append(range(low, row))
            low, held = row, 0
        held += size * across
    return [*found, range(low, len(sizes))]


class Column(NamedTuple):
    """One column of a routed graph: where its blocks are, and how its splits read them."""

    here: tuple[tuple[int, ...], tuple[int, ...]]  # the block's numbers before, after the axis
    runs: list[range]  # the blocks of indices along the axis that each split reads
    spans: tuple[Any, int, int]  # data's starts along the axis, its size, its blocks' width
    shape: tuple[int, ...]  # data's blocks of the column, the axis left as 1
    shares: bool  # the lanes travel as one share per reader

    def at(self, row: int) -> tuple[int, ...]:
        """The numbers of block ``row`` along the axis of this column."""
        return (*self.here[0], row, *self.here[1])


def column_of(
    request: ScatterRequest | GatherRequest, indices: Any, column: tuple[int, ...], shares: bool
) -> Column:
    """The layout of ``column``, for indices rechunked as :func:`scatterx_dask._plan.plan`
    says. ``shares`` (on a cluster) holds only where a split holds :data:`SMALL_RUN`
    elements or more on average: a task costs a cluster about a millisecond, more than
    sending a small lane whole to each reader."""
    data, axis = request.data, request.axis
    origin = np.asarray(starts(data.chunks[axis]), dtype=np.int64)
    spans = (origin, request.axis_size, _width(data.chunks[axis]))
    shape = tuple(1 if d == axis else data.chunks[d][i] for d, i in enumerate(column))
    # the indices of the column off the axis: data's blocks, cut where indices end
    across = math.prod(indices.chunks[d][i] for d, i in enumerate(column) if d != axis)
    found = runs(indices.chunks[axis], data.numblocks[axis], across)
    shares = shares and sum(indices.chunks[axis]) * across >= SMALL_RUN * len(found)
    return Column((column[:axis], column[axis + 1 :]), found, spans, shape, shares)


def split_tasks(
    graph: dict[Any, Any], name: str, arrays: list[Any], layout: Column, task: SplitTask
) -> tuple[dict[int, Any], list[Any]]:
    """Add a split per run of ``layout`` (``task`` says what it runs, from the run's
    number, its blocks of each of ``arrays`` and its place in the whole indices), and a
    small task beside each that hands on its first bad index; return the splits' keys by
    origin, and those small tasks' keys."""
    offsets = [starts(sizes) for sizes in arrays[0].chunks]
    lanes, found = {}, []
    for origin, run in enumerate(layout.runs):
        key = (f"{name}-split", *layout.at(origin))
        parts = [[(a.name, *layout.at(row)) for row in run] for a in arrays]
        corner = tuple(offsets[d][i] for d, i in enumerate(layout.at(run.start)))
        graph[key] = task(origin, parts, (corner, arrays[0].shape))
        lanes[origin] = key
        found.append((f"{name}-bad", *layout.at(origin)))
        graph[found[-1]] = (_route.bad, key)
    return lanes, found


def butterfly(
    graph: dict[Any, Any],
    name: str,
    lanes: dict[int, Any],
    ends: tuple[int, int, Column],
    last: LastStage,
) -> dict[int, Any]:
    """Add the stages that take the pieces of ``lanes`` (by origin) to their destinations
    (``ends``: how many origins and destinations, and the column); return the last stage's
    keys by destination, each made by ``last``.

    At stage ``s`` a lane takes, from the ``F`` lanes that differ from it in digit ``s``
    (base ``F``), the pieces whose destination has its own digit ``s``. With shares (on a
    cluster), each lane of a stage is read through one small task per reader that takes
    the reader's share of it (a :func:`~scatterx_dask._route.merge` of one lane), as dask's
    task shuffle does with ``getitem``: a worker then receives only the pieces bound for
    its own tasks, not every lane whole; more tasks, none copying.
    """
    origins, targets, layout = ends
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
            if layout.shares:
                inputs = [_share(graph, (name, stage, digit), key, placed, base) for key in inputs]
            merged = (digit, placed, base, *inputs)
            if stage < count - 1:
                key = (f"{name}-route-{stage}", *layout.at(lane))
                graph[key] = (_route.merge, *merged)
            else:
                key, graph_task = last(lane, merged)
                graph[key] = graph_task
            now[lane] = key
        lanes = now
    return lanes


def _share(
    graph: dict[Any, Any], reader: tuple[str, int, int], lane: Any, placed: int, base: int
) -> Any:
    """The key of a task taking, of ``lane``, the share of the stage's readers with
    ``digit`` at place ``placed``."""
    name, stage, digit = reader
    key = (f"{name}-share-{stage}", *lane[1:], digit)
    graph[key] = (_route.merge, digit, placed, base, lane)
    return key


def scattered(
    graph: dict[Any, Any],
    request: ScatterRequest,
    name: str,
    arrays: tuple[Any, Any],
    column: tuple[int, ...],
    after: tuple[str | None, bool],
) -> list[Any]:
    """One column of a scatter: each run of blocks of indices and updates split by
    destination, the pieces routed to their blocks of data, one flat call per block, after
    the guard (``after``: its key, and whether lanes may travel as shares). Returns the
    keys of the splits' first bad indices, for the guard's tree."""
    guard, shares = after
    axis = request.axis
    layout = column_of(request, arrays[0], column, shares)

    def split(origin: int, parts: list[list[Any]], place: Any) -> Any:
        return (_route.split, *parts, axis, layout.spans, layout.shape, place)

    lanes, found = split_tasks(graph, name, list(arrays), layout, split)

    def applied(lane: int, merged: tuple[Any, ...]) -> tuple[Any, Any]:
        block = (request.data.name, *layout.at(lane))
        args = (block, guard, lane, axis, request.reduction, *merged)
        return (name, *layout.at(lane)), (_route.applied, *args)

    ends = (len(layout.runs), request.data.numblocks[axis], layout)
    butterfly(graph, name, lanes, ends, applied)
    return found


def gathered(
    graph: dict[Any, Any],
    request: GatherRequest,
    name: str,
    indices: Any,
    column: tuple[int, ...],
    after: tuple[str | None, bool],
) -> list[Any]:
    """One column of a gather: each run of blocks of indices split by destination, the
    requests routed to their blocks of data, which read the elements asked for and send
    them back to the runs through a second butterfly; each run puts them in place, and its
    blocks of the result are slices of it. As :func:`scattered` for the rest."""
    guard, shares = after
    axis, data = request.axis, request.data
    layout = column_of(request, indices, column, shares)

    def split(origin: int, parts: list[list[Any]], place: Any) -> Any:
        return (_route.split_requests, *parts, origin, axis, layout.spans, layout.shape, place)

    lanes, found = split_tasks(graph, name, [indices], layout, split)

    def read(lane: int, merged: tuple[Any, ...]) -> tuple[Any, Any]:
        block = (data.name, *layout.at(lane))
        return (f"{name}-read", *layout.at(lane)), (_route.read, block, guard, lane, *merged)

    origins, targets = len(layout.runs), data.numblocks[axis]
    read_lanes = butterfly(graph, name, lanes, (origins, targets, layout), read)
    rows = [starts(tuple(indices.chunks[axis][row] for row in run)) for run in layout.runs]

    def answer(lane: int, merged: tuple[Any, ...]) -> tuple[Any, Any]:
        run = layout.runs[lane]
        shape = [indices.chunks[d][i] for d, i in enumerate(layout.at(run.start))]
        shape[axis] = sum(indices.chunks[axis][row] for row in run)
        key = (name if len(run) == 1 else f"{name}-joined", *layout.at(run.start))
        return key, (_route.answered, tuple(shape), data.dtype, lane, *merged)

    back = butterfly(graph, f"{name}-back", read_lanes, (targets, origins, layout), answer)
    for origin, run in enumerate(layout.runs):
        if len(run) == 1:
            continue
        for row, low in zip(run, rows[origin], strict=True):
            high = low + indices.chunks[axis][row]
            graph[(name, *layout.at(row))] = (_route.part, back[origin], axis, low, high)
    return found
