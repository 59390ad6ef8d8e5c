"""One lazy scatter or gather: plan the chunks, build the graph, return the result's Dask array."""

from __future__ import annotations

import importlib
import operator
from typing import Any

from scatterx.backend import GatherRequest, ScatterRequest

from . import _graph, _tasks
from ._cores import loaded_distributed
from ._plan import merged_along, plan


def _renamed(key: Any, token: str) -> Any:
    return (f"{key[0]}-{token}", *key[1:]) if isinstance(key, tuple) else f"{key}-{token}"


def _clone(array: Any, token: str) -> Any:
    """``array`` with a graph of its own: the same tasks under new keys, computed again.

    (``dask.graph_manipulation.clone`` leaves some tasks' own keys and dependencies the
    old ones, for ``da.random``'s layers and rechunks, which task fusion then trips over.)
    Futures (blocks persisted on a cluster) are computed already: they stay as they are,
    and an array of futures only is its own clone.
    """
    import dask.array as da
    from dask._task_spec import convert_legacy_graph
    from dask.core import flatten
    from dask.highlevelgraph import HighLevelGraph

    raw = dict(array.__dask_graph__())
    tasks = convert_legacy_graph(raw)  # leaves futures out
    held = {key: value for key, value in raw.items() if key not in tasks}
    if all(key in held for key in flatten(array.__dask_keys__())):  # type: ignore[no-untyped-call]
        return array
    names = {key: _renamed(key, token) for key in tasks}
    graph = {names[key]: task.substitute(names, key=names[key]) for key, task in tasks.items()}
    graph.update(held)
    name = _renamed(array.name, token)
    layers = HighLevelGraph({name: graph}, {name: set()})
    return da.Array(layers, name, array.chunks, meta=array._meta)  # type: ignore[no-untyped-call]


def _guarded(data: Any, indices: Any, rechunked: Any, axis: int, token: str) -> list[Any]:
    """The clone of the user's ``indices`` that the guard reads, as a list: empty where the
    ``rechunked`` indices need no guard (see :func:`scatterx_dask._graph.needs_guard`)."""
    needed = _graph.needs_guard(data, rechunked, axis)
    return [_clone(indices, f"checked-{token}")] if needed else []


#: The result that a scatter's chains may hold at once, waiting for each other's checks
#: (:func:`_self_checked`), in chunks of dask's ``array.chunk-size``.
SELF_CHECKED_CHUNKS = 2


def _self_checked(data: Any, indices: Any, axis: int) -> bool:
    """Whether the chains of a scatter (data whole along the axis) check their own indices,
    in place of a guard's pass over a clone of them: where a guard is needed and the
    result is small (at most :data:`SELF_CHECKED_CHUNKS` of dask's ``array.chunk-size``),
    since every block of it is then held until every chain has run.
    """
    import dask
    from dask.utils import parse_bytes

    if not _graph.needs_guard(data, indices, axis):
        return False
    chunk = parse_bytes(dask.config.get("array.chunk-size"))
    return bool(data.nbytes <= SELF_CHECKED_CHUNKS * chunk)


def _on_a_cluster() -> bool:
    """Whether a ``distributed`` client is the default at the call, as dask's own shuffles
    ask before they choose a method: then the route's lanes travel as shares."""
    distributed = loaded_distributed()
    if distributed is None:
        return False
    try:
        distributed.default_client()
    except ValueError:  # no client
        return False
    return True


def _strings_checked(array: Any, role: str) -> Any:
    """An array of strings (object, or StringDType with a missing value) with each block
    checked for str only at its place in the whole: the in-memory call would tell a
    position in the block, and a gather reads no block that no index aims at."""
    if array.dtype.kind != "O" and not hasattr(array.dtype, "na_object"):
        return array
    return array.map_blocks(_tasks.strings_checked, role, dtype=array.dtype, meta=array._meta)


def scatter_elements(request: ScatterRequest, checked: bool = False) -> Any:
    """The lazy result of ``request`` (of Dask arrays): nothing is computed here.

    ``checked``: every index is in bounds by the time a block reads it (a guard of the
    caller's orders its tasks first), so none is added here.
    """
    da: Any = importlib.import_module("dask.array")
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    # Unknown chunk sizes (NaN) were refused with the shapes, by the front-end's checks.
    data, indices, updates = request.data, request.indices, request.updates
    data, updates = _strings_checked(data, "data"), _strings_checked(updates, "updates")
    request = request._replace(data=data, updates=updates)
    if request.n_updates == 0:
        return data.map_blocks(_tasks.copied, request.axis, request.reduction, dtype=data.dtype)
    if merged_along(data.chunks, indices.chunks, updates.chunks, request.axis):
        whole = request._replace(data=data.rechunk({request.axis: -1}))
        return _cut_along(scatter_elements(whole, checked), data.chunks, request.axis)
    lined_up = plan(data.chunks, indices.chunks, updates.chunks, request.axis)
    indices_r = indices.rechunk(lined_up.index_chunks)
    updates_r = updates.rechunk(lined_up.index_chunks)
    token = tokenize(data, indices, updates, request.axis, request.reduction)
    routed = data.numblocks[request.axis] > 1  # its splits check the indices they read
    self_checked = not (routed or checked) and _self_checked(data, indices_r, request.axis)
    guarded = routed or checked or self_checked
    clones = [] if guarded else _guarded(data, indices, indices_r, request.axis, token)
    name = f"scatter_elements-{token}"
    clone = clones[0] if clones else None
    arrays = (indices_r, updates_r)
    shares = _on_a_cluster()
    layer = _graph.tasks(request, name, lined_up, arrays, clone, shares, self_checked)
    inputs = [data, indices_r, updates_r, *clones]
    graph = HighLevelGraph.from_collections(name, layer, dependencies=inputs)
    return da.Array(graph, name, data.chunks, meta=data._meta)


def _cut_along(whole: Any, chunks: Any, axis: int) -> Any:
    """``whole`` (whole along ``axis``) in ``chunks``: each block a view of its column's."""
    import itertools

    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    name = f"scatter_elements-{tokenize(whole.name, chunks)}"
    edges = list(itertools.accumulate(chunks[axis], initial=0))
    layer: dict[Any, Any] = {}
    for block in itertools.product(*(range(len(c)) for c in chunks)):
        column = (*block[:axis], 0, *block[axis + 1 :])
        where = (slice(None),) * axis + (slice(edges[block[axis]], edges[block[axis] + 1]),)
        layer[(name, *block)] = (operator.getitem, (whole.name, *column), where)
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[whole])
    return da.Array(graph, name, chunks, meta=whole._meta)  # type: ignore[no-untyped-call]


def gather_elements(request: GatherRequest, checked: bool = False) -> Any:
    """The lazy result of the gather ``request`` (of Dask arrays): nothing is computed here;
    ``checked`` as for :func:`scatter_elements`.

    The result has indices' chunks, rechunked as for a scatter: off the axis to data's
    chunks (cut where indices end), along it into pieces no larger than the largest block
    of the inputs.
    """
    da: Any = importlib.import_module("dask.array")
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    data, indices, axis = request.data, request.indices, request.axis
    data = _strings_checked(data, "data")
    if merged_along(data.chunks, indices.chunks, indices.chunks, axis):
        data = data.rechunk({axis: -1})  # a column no larger than an input's block
    request = request._replace(data=data)
    if request.n_indices == 0:
        return indices.map_blocks(_tasks.gathered_nothing, data.dtype, meta=data._meta)
    lined_up = plan(data.chunks, indices.chunks, indices.chunks, axis)
    indices_r = indices.rechunk(lined_up.index_chunks)
    token = tokenize("gather_elements", data, indices, axis)
    routed = data.numblocks[axis] > 1  # its splits check the indices they read
    clones = [] if routed or checked else _guarded(data, indices, indices_r, axis, token)
    name = f"gather_elements-{token}"
    clone = clones[0] if clones else None
    layer = _graph.gather_tasks(request, name, indices_r, clone, shares=_on_a_cluster())
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[data, indices_r, *clones])
    return da.Array(graph, name, indices_r.chunks, meta=data._meta)
