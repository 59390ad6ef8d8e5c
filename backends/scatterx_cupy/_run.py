"""Run a request on the GPU: pick the strategy, launch the kernels, raise bad indices."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from scatterx import ScatterRequest, out_of_bounds_error

from . import _compile
from ._layout import Layout, layout

_BLOCK = 256
_NO_ERROR = np.uint64(2**64 - 1)
#: Columns of at most this many steps cost little even when too few to fill the device.
SHORT_AXIS = 128
#: Resident threads per multiprocessor that the column and strand kernels aim for.
THREADS_PER_SM = 2048
#: A column kernel with fewer columns than this runs its walks with too little overlap;
#: sorting is then cheaper (tools/gpu_check.sh measures both ways).
COLUMNS_MIN = 8192

STRATEGIES = ("columns", "sort", "atomics")


@lru_cache(maxsize=16)
def _device_threads(device_id: int) -> int:
    import cupy

    count = cupy.cuda.Device(device_id).attributes["MultiProcessorCount"]
    return int(count) * THREADS_PER_SM


@lru_cache(maxsize=256)
def _geometry(geom: tuple[int, ...], device_id: int) -> Any:
    """The ``geom`` array on one device; cached, so a repeated shape uploads nothing."""
    import cupy

    with cupy.cuda.Device(device_id):
        array = cupy.asarray(np.asarray(geom, dtype=np.int64))
        # Other streams may read it later: the upload must be over before it is shared.
        cupy.cuda.get_current_stream().synchronize()
    return array


def strategy(lay: Layout, key: str, reduction: str) -> str:
    """The kernel strategy for a call; see the package docstring for the rule."""
    if _compile.uses_atomics(key, reduction):
        return "atomics"
    if lay.n_cols >= COLUMNS_MIN or lay.axis_len <= SHORT_AXIS:
        return "columns"
    return "sort"


def scatter_elements(request: ScatterRequest, force: str | None = None) -> Any:
    """Compute ``request`` on cupy arrays, on the device of ``data`` and the current stream.

    ``force`` names a strategy (benchmarks and tests); any of them gives the same bits.
    """
    data = request.data
    with data.device:
        # bools as canonical 0/1 bytes, whatever bytes data held, as on every backend.
        out = data.copy(order="C") if data.dtype.kind != "b" else _canonical_bool(data)
        if request.n_updates == 0:
            return out
        lay = layout(request.shape, request.index_shape, request.axis)
        chosen = force or strategy(lay, request.dtype_key, request.reduction)
        if chosen == "atomics" and not _compile.uses_atomics(request.dtype_key, request.reduction):
            msg = f"atomics would change the bits of {request.dtype_key} {request.reduction}"
            raise ValueError(msg)
        _launch(chosen, out, request, lay)
        return out


def _canonical_bool(array: Any) -> Any:
    """A C-ordered bool array of 0/1 bytes: any nonzero byte is True."""
    import cupy

    return cupy.ascontiguousarray(array.view(cupy.uint8) != 0)


def _launch(chosen: str, out: Any, request: ScatterRequest, lay: Layout) -> None:
    import cupy

    device_id = out.device.id
    indices = cupy.ascontiguousarray(request.indices)
    updates = cupy.ascontiguousarray(request.updates)
    if updates.dtype.kind == "b":
        updates = _canonical_bool(updates)
    err = cupy.full(1, _NO_ERROR, dtype=cupy.uint64)
    geom = _geometry(lay.geometry(), device_id)
    shape = (
        np.int64(lay.n_cols),
        np.int64(lay.n_inner),
        np.int64(lay.axis_len),
        np.int64(lay.size),
        np.int64(lay.stride),
    )
    index = str(indices.dtype)
    key, reduction = request.dtype_key, request.reduction
    if chosen == "columns":
        kernel = _compile.module(key).get_function(_compile.columns_name(key, index, reduction))
        kernel(_blocks(lay.n_cols), (_BLOCK,), (out, indices, updates, geom, *shape, err))
        _raise_bad_index(err, indices, request)
    elif chosen == "atomics":
        strands = _strands(lay, device_id)
        kernel = _compile.module(key).get_function(_compile.atomics_name(key, index, reduction))
        args = (out, indices, updates, geom, *shape, np.int64(strands), err)
        kernel(_blocks(lay.n_cols * strands), (_BLOCK,), args)
        _raise_bad_index(err, indices, request)
    elif chosen == "sort":
        _sort_and_reduce(out, indices, updates, request, lay, (geom, shape, err))
    else:
        msg = f"strategy must be one of {STRATEGIES}; got {chosen!r}"
        raise ValueError(msg)


def _sort_and_reduce(
    out: Any, indices: Any, updates: Any, request: ScatterRequest, lay: Layout, extra: Any
) -> None:
    """Strategy (b): flat targets, a stable sort, then one thread per run of equal targets."""
    import cupy

    geom, shape, err = extra
    key_type = "int32" if out.size < 2**31 else "int64"
    n = request.n_updates
    keys = cupy.empty(n, dtype=key_type)
    strands = _strands(lay, out.device.id)
    targets = _compile.module("targets").get_function(
        _compile.targets_name(str(indices.dtype), key_type)
    )
    targets(
        _blocks(lay.n_cols * strands),
        (_BLOCK,),
        (keys, indices, geom, *shape, np.int64(strands), err),
    )
    # A bad index leaves target 0 as a placeholder: the result is then wrong but never
    # returned, and the one host sync stays at the end.
    order = stable_argsort(keys)
    sorted_keys = keys[order]
    key, reduction = request.dtype_key, request.reduction
    runs = _compile.module(key).get_function(_compile.runs_name(key, key_type, reduction))
    runs(_blocks(n), (_BLOCK,), (out, sorted_keys, order, updates, np.int64(n)))
    _raise_bad_index(err, indices, request)


def stable_argsort(keys: Any) -> Any:
    """``cupy.argsort`` is a stable (Thrust) sort; ask for it by name where cupy accepts that."""
    import cupy

    try:
        return cupy.argsort(keys, kind="stable")
    except (TypeError, ValueError, NotImplementedError):
        return cupy.argsort(keys)  # documented stable for every kind


def _strands(lay: Layout, device_id: int) -> int:
    """Threads per column for the strand kernels: enough for about four waves in all."""
    wanted = -(-4 * _device_threads(device_id) // lay.n_cols)
    return max(1, min(lay.axis_len, wanted))


def _blocks(threads: int) -> tuple[int]:
    return (max(1, -(-threads // _BLOCK)),)


def _raise_bad_index(err: Any, indices: Any, request: ScatterRequest) -> None:
    """The one host sync of a call: raise the contract's IndexError for the first bad index."""
    first = int(err.get()[0])
    if first == int(_NO_ERROR):
        return
    value = int(indices.reshape(-1)[first].get())
    position = tuple(int(p) for p in np.unravel_index(first, request.index_shape))
    raise out_of_bounds_error(value, position, request.axis, request.axis_size)
