"""Run a request on the GPU: pick the strategy, launch the kernels, raise bad indices."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from scatterx.backend import Request, ScatterRequest, out_of_bounds_error

from . import _compile, _fast
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

STRATEGIES = ("columns", "sort", "atomics", *_fast.FAST_STRATEGIES)


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


def strategy(
    lay: Layout, key: str, reduction: str, data_size: int | None = None, fast: bool | None = None
) -> str:
    """The kernel strategy for a call; see the package docstring for the rule.

    ``fast``: whether the fast paths may be chosen (None: as ``_fast.fast_paths_enabled``
    says); ``data_size`` (elements of ``data``) bounds their winner arrays.
    """
    if _compile.uses_atomics(key, reduction):
        return "atomics"
    if fast is None:
        fast = _fast.fast_paths_enabled()
    early = _fast.before_columns(lay, key, reduction, data_size) if fast else None
    if early is not None:
        return early
    if lay.n_cols >= COLUMNS_MIN or lay.axis_len <= SHORT_AXIS:
        return "columns"
    if fast and _fast.rows_fit(lay):
        return "rows"
    return "sort"


def scatter_elements(request: ScatterRequest, force: str | None = None, rows: Any = None) -> Any:
    """Compute ``request`` on cupy arrays, on the device of ``data`` and the current stream.

    The result is written into ``request.out`` when it is C-ordered (see
    :func:`destination`), else into a new C-ordered array. ``force`` names a strategy
    (benchmarks and tests); any of them gives the same bits.

    ``rows`` (``scatterx_cupy._nd``): each row of ``indices`` along the axis holds one
    value, these (int64, one per row), every one known in bounds: nothing is checked again,
    and the strategy ``rows`` sorts and reads these, not ``indices``.
    """
    with request.data.device:
        out, checked = destination(request, checked=rows is not None)
        if request.n_updates == 0:
            return out
        lay = layout(request.shape, request.index_shape, request.axis)
        key, reduction = request.dtype_key, request.reduction
        chosen = force or strategy(lay, key, reduction, out.size)
        if chosen == "atomics" and not _compile.uses_atomics(key, reduction):
            msg = f"atomics would change the bits of {key} {reduction}"
            raise ValueError(msg)
        refusal = _fast.refusal(chosen, lay, key, reduction)
        if refusal is not None:
            msg = f"strategy {chosen!r} cannot run {key} {reduction}: {refusal}"
            raise ValueError(msg)
        if rows is not None and chosen == "rows":
            _whole_rows(out, rows, request, lay)
            return out
        err = _launch(chosen, out, request, lay)
        if not checked:
            _raise_bad_index(err, request.indices, request)
        return out


def destination(request: ScatterRequest, checked: bool = False) -> tuple[Any, bool]:
    """The array the kernels update, holding ``data``'s values, and whether the indices
    were checked already (``checked``: they were, by the caller).

    ``request.out`` when it is C-ordered (the kernels' layout): its indices are checked
    first, with one host sync, so that a call that raises leaves it untouched (contract
    section 7); then ``data`` is copied in, unless it is ``data`` itself (an update in
    place, with no copy at all). Otherwise a new C-ordered copy of ``data``, and the
    indices are checked by the kernels themselves, at the call's one sync. Bools become
    canonical 0/1 bytes, whatever bytes ``data`` held, as on every backend.
    """
    data, out = request.data, checked_out(request, checked)
    if out is None:
        copied = _canonical_bool(data) if data.dtype.kind == "b" else data.copy(order="C")
        return copied, checked
    if data.dtype.kind == "b":
        out[...] = _canonical_bool(data)
    elif out is not data:
        out[...] = data
    return out, True


def checked_out(request: Request, checked: bool = False) -> Any:
    """``request.out`` when the kernels can write into it (C-ordered), its indices checked
    first (:func:`check_bounds`) unless ``checked`` (by the caller); None when there is no
    such ``out``."""
    out = request.out
    if out is None or not out.flags.c_contiguous:
        return None
    if request.indices.size and not checked:
        check_bounds(request)
    return out


def check_bounds(request: Request) -> None:
    """Raise the contract's IndexError for the first bad index in C order, before any write:
    one read of the indices and one host sync."""
    import cupy

    indices = cupy.ascontiguousarray(request.indices)
    count = indices.size
    err = cupy.full(1, _NO_ERROR, dtype=cupy.uint64)
    kernel = _compile.module("targets").get_function(_compile.bounds_name(str(indices.dtype)))
    threads = min(count, 4 * _device_threads(indices.device.id))
    sizes = (np.int64(count), np.int64(request.axis_size))
    kernel(_blocks(threads), (_BLOCK,), (indices, *sizes, err))
    _raise_bad_index(err, indices, request)


def _canonical_bool(array: Any) -> Any:
    """A C-ordered bool array of 0/1 bytes: any nonzero byte is True."""
    import cupy

    return cupy.ascontiguousarray(array.view(cupy.uint8) != 0)


def _launch(chosen: str, out: Any, request: ScatterRequest, lay: Layout) -> Any:
    """Launch strategy ``chosen`` on ``out``; return the device word of the first bad index.

    The rows strategy has read it already: it raises there, before its second pass.
    """
    import cupy

    device_id = out.device.id
    indices = cupy.ascontiguousarray(request.indices)
    updates = _kernel_updates(request)
    # err[0]: the first bad position (all ones: none); err[1] (rows): zero when rows are mixed.
    err = cupy.full(2 if chosen == "rows" else 1, _NO_ERROR, dtype=cupy.uint64)
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
    elif chosen == "atomics":
        strands = _strands(lay, device_id)
        kernel = _compile.module(key).get_function(_compile.atomics_name(key, index, reduction))
        args = (out, indices, updates, geom, *shape, np.int64(strands), err)
        kernel(_blocks(lay.n_cols * strands), (_BLOCK,), args)
    elif chosen == "sort":
        _sort_and_reduce(out, indices, updates, request, lay, (geom, shape, err))
    elif chosen == "warps":
        kernel = _compile.module(key, fast=True).get_function(
            _compile.warps_name(key, index, reduction)
        )
        per_warp = (out, indices, updates, geom, shape[0], *shape[2:], err)
        kernel(_blocks(lay.n_cols * 32), (_BLOCK,), per_warp)
    elif chosen == "winner":
        _winners(out, indices, updates, request, (geom, shape, err))
    elif chosen == "rows":
        _rows(out, indices, updates, request, lay, (geom, shape, err))
    else:
        msg = f"strategy must be one of {STRATEGIES}; got {chosen!r}"
        raise ValueError(msg)
    return err


def _kernel_updates(request: ScatterRequest) -> Any:
    """``updates`` as the kernels read them: C-ordered, bools as canonical 0/1 bytes."""
    import cupy

    updates = cupy.ascontiguousarray(request.updates)
    return _canonical_bool(updates) if updates.dtype.kind == "b" else updates


def _sort_and_reduce(
    out: Any,
    indices: Any,
    updates: Any,
    request: ScatterRequest,
    lay: Layout,
    extra: Any,
    keys: Any = None,
) -> None:
    """Strategy (b): flat targets, a stable sort, then one thread per run of equal targets.

    ``keys``: the flat targets when the caller has them already (the rows check).
    """
    import cupy

    geom, shape, err = extra
    key_type = _key_type(out)
    n = request.n_updates
    if keys is None:
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


def _key_type(out: Any) -> str:
    """The type of flat targets (and row keys): int32 while they fit."""
    return "int32" if out.size < 2**31 else "int64"


def _winners(out: Any, indices: Any, updates: Any, request: ScatterRequest, extra: Any) -> None:
    """Fast strategy ``winner``: each target's winner by integer atomicMax, then it writes.

    The winner of ``none`` is the largest position; of max/min, the largest key of value and
    position (``scx_win_key``).
    """
    import cupy

    geom, shape, err = extra
    n = request.n_updates
    key, reduction, index = request.dtype_key, request.reduction, str(indices.dtype)
    flat = (geom, np.int64(n), *shape[1:])
    module = _compile.module(key, fast=True)
    if reduction == "none":
        win = cupy.zeros(out.size, dtype=cupy.uint32)
        first = _compile.module("targets", fast=True).get_function(_compile.win_last_name(index))
        second = module.get_function(_compile.put_last_name(key, index))
        first(_blocks(n), (_BLOCK,), (win, indices, *flat, err))
        second(_blocks(n), (_BLOCK,), (out, win, indices, updates, *flat))
    else:
        win = cupy.zeros(out.size, dtype=cupy.uint64)
        names = _compile.best_names(key, index, reduction)
        first, second = (module.get_function(name) for name in names)
        first(_blocks(n), (_BLOCK,), (win, indices, updates, *flat, err))
        second(_blocks(n), (_BLOCK,), (out, win, indices, updates, *flat))


def _rows(
    out: Any, indices: Any, updates: Any, request: ScatterRequest, lay: Layout, extra: Any
) -> None:
    """Fast strategy ``rows``: sort whole index rows when each row is one target, else ``sort``.

    An index row is constant along the inner dims in an embedding's backward: its row key
    alone is then sorted, and one thread per (run of equal rows, inner position) walks it.
    """
    import cupy

    geom, shape, err = extra
    key_type = _key_type(out)
    n = request.n_updates
    key, reduction, index = request.dtype_key, request.reduction, str(indices.dtype)
    keys = cupy.empty(n, dtype=key_type)
    rows = cupy.empty(lay.n_outer * lay.axis_len, dtype=key_type)
    check = _compile.module("targets", fast=True).get_function(
        _compile.row_keys_name(index, key_type)
    )
    flat = (geom, np.int64(n), *shape[1:])
    check(_blocks(n), (_BLOCK,), (keys, rows, err[1:], indices, *flat, err))
    bad, constant = (int(v) for v in err.get())  # a second host sync, to pick the path
    if bad != int(_NO_ERROR):
        _raise_bad_index(err, indices, request)
    if not constant:
        _sort_and_reduce(out, indices, updates, request, lay, extra, keys)
        return
    order = stable_argsort(rows)
    walk = _compile.module(key, fast=True).get_function(
        _compile.row_runs_name(key, key_type, reduction)
    )
    args = (out, rows[order], order, updates, geom, np.int64(rows.size), *shape[1:2])
    walk(_blocks(n), (_BLOCK,), (*args, *shape[3:]))


def _whole_rows(out: Any, rows: Any, request: ScatterRequest, lay: Layout) -> None:
    """Strategy ``rows`` on index rows known whole and in bounds (a ScatterND's): the row
    keys are ``rows`` themselves, one per row, so the check pass of :func:`_rows` is not
    needed and no index is read but these; then its walk of the sorted rows."""
    key_type = _key_type(out)
    n = request.n_updates
    key, reduction = request.dtype_key, request.reduction
    keys = rows.reshape(-1).astype(key_type)  # o = 0: the axis is data's first dimension
    order = stable_argsort(keys)
    walk = _compile.module(key, fast=True).get_function(
        _compile.row_runs_name(key, key_type, reduction)
    )
    geom = _geometry(lay.geometry(), out.device.id)
    sizes = (np.int64(keys.size), np.int64(lay.n_inner), np.int64(lay.size), np.int64(lay.stride))
    args = (out, keys[order], order, _kernel_updates(request), geom, *sizes)
    walk(_blocks(n), (_BLOCK,), args)


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


def _raise_bad_index(err: Any, indices: Any, request: Request) -> None:
    """The one host sync of a call: raise the contract's IndexError for the first bad index."""
    first = int(err.get()[0])
    if first == int(_NO_ERROR):
        return
    value = int(indices.reshape(-1)[first].get())
    position = tuple(int(p) for p in np.unravel_index(first, request.index_shape))
    raise out_of_bounds_error(value, position, request.axis, request.axis_size)
