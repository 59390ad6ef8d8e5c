"""One call on the numba backend: views and layouts, the plan, the launch, the bounds error."""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from scatterx.backend import Request, ScatterRequest, empty_aligned, out_of_bounds_error

from . import _call, _launch, _layout, _plan, _runtime
from ._call import kernel_ready

Array = np.ndarray[Any, Any]


class KernelArrays(NamedTuple):
    """The arrays of a call, as the kernels see them (shapes: see :mod:`scatterx_numba._tasks`)."""

    out: Array  # (outer, size, inner), written
    data: Array  # read-only, shaped as out: data, or out itself when it holds the copy
    idx: Array  # (outer', rows, inner'), read-only
    upd: Array  # as idx, in storage form
    outer_map: Array  # flat outer position of out for each of idx
    inner_map: Array  # flat inner position of out for each of idx


def _readonly(array: Array) -> Array:
    """A read-only view: every input then has one numba type, so one compiled signature."""
    view = array.view()
    view.flags.writeable = False
    return view


def _input(array: Array, dtype: np.dtype[Any], storage: np.dtype[Any]) -> Array:
    """``array`` as C-ordered native ``dtype`` viewed as ``storage``; copies only if needed."""
    if not kernel_ready(array, dtype):
        array = np.array(array, dtype=dtype, order="C", copy=True)
    return _readonly(array.view(storage))


#: Positions of the largest maps that :func:`_maps` keeps (two int64 arrays of at most
#: this many each, 256 kinds of call: 128 MiB at most).
_KEPT_MAP = 1 << 15


def _maps(
    data_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int
) -> tuple[Array, Array]:
    """Flat outer and inner positions of data for each flat outer/inner position of indices.

    Read-only, so shared by the calls of one kind: a call made again and again (in place,
    say) spares their making, whose cost grows tenfold once the kernel has evicted the
    interpreter's state from the caches (docs/backends/numba.md). Only small maps are
    kept: a large one costs little beside its call's own work, and would hold its memory.
    """
    parts = (index_shape[:axis], index_shape[axis + 1 :])
    if max(math.prod(part) for part in parts) <= _KEPT_MAP:
        return _kept_maps(data_shape, index_shape, axis)
    return _made_maps(data_shape, index_shape, axis)


def _made_maps(
    data_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int
) -> tuple[Array, Array]:
    maps = []
    for part in (slice(0, axis), slice(axis + 1, None)):
        index_part, data_part = index_shape[part], data_shape[part]
        count = math.prod(index_part)
        flat = np.arange(count, dtype=np.int64)
        if index_part != data_part and count:
            flat = np.ravel_multi_index(np.unravel_index(flat, index_part), data_part)
            flat = flat.astype(np.int64)
        maps.append(_readonly(flat))
    return maps[0], maps[1]


# No lock: read-only maps that depend on the shapes alone; two threads that both miss make
# equal ones, and either is kept.
_kept_maps = lru_cache(maxsize=256)(_made_maps)


def _raise_first_bad(bad: Array, request: Request) -> None:
    """Raise the contract's IndexError for the first out-of-bounds index in C order."""
    if max(bad.tolist(), default=-1) < 0:  # every task: -1 (no ufunc: see _maps)
        return
    found = bad[bad >= 0]
    if found.size:
        position = tuple(int(p) for p in np.unravel_index(int(found.min()), request.index_shape))
        value = int(request.indices[position])
        raise out_of_bounds_error(value, position, request.axis, request.axis_size)


def _canonical_bool(array: Array) -> Array:
    """A C-ordered bool array of 0/1 bytes: any nonzero byte is True."""
    return np.not_equal(array.view(np.uint8), 0, order="C")


def constant_rows(rows: Iterable[Array]) -> bool:
    """Whether each of ``rows`` holds one value (an embedding gradient's index rows)."""
    for row in rows:
        flat = row.reshape(-1)
        # The ends of a row first: they turn random rows away without a full compare.
        if flat.size < 2 or flat[0] != flat[-1] or not bool((flat == flat[0]).all()):
            return False
    return True


# No lock: a placeholder is never written, so two threads that both make one
# for a dtype each launch with theirs (of one numba type), and either is kept.
_UNUSED: dict[np.dtype[Any], Array] = {}


def _scratch(scratch: _launch.Scratch) -> Array:
    """The strategy's scratch array; one placeholder, never written, per dtype."""
    arg = scratch.arg
    if scratch.placeholder:
        found = _UNUSED.get(arg.dtype)
        if found is None:
            found = _UNUSED[arg.dtype] = np.empty(arg.shape, arg.dtype)
        return found
    if scratch.fill is None:
        return np.empty(arg.shape, arg.dtype)
    return np.full(arg.shape, scratch.fill, arg.dtype)


def _copy_words(out: Array, data: Array, n_tasks: int) -> None:
    """``out[...] = data`` on every thread (both C-ordered, aligned, large), as bytes."""
    dst, src = out.reshape(-1).view(np.uint8), _readonly(data.reshape(-1).view(np.uint8))
    _runtime.launch(_runtime.pass_kernel("copy_words"), dst, src, n_tasks)


def _kernel_arrays(
    plan: _launch.LaunchPlan,
    request: ScatterRequest,
    data: Array,
    updates: Array,
    out: Array,
    idx: Array,
) -> KernelArrays:
    """The arrays of the call as ``plan`` has them; ``out`` gets data first where the plan
    says so."""
    if plan.copy_first is _launch.Copy.NUMPY:
        np.copyto(out, data)
    elif plan.copy_first is _launch.Copy.PASS:
        _copy_words(out, data, _launch.copy_tasks(plan.threads))
    specs = plan.arrays
    outer_map, inner_map = _maps(request.shape, request.index_shape, request.axis)
    return KernelArrays(
        out=specs.out.of(out),
        data=specs.data.of(data if plan.fused_copy else out),
        idx=specs.idx.of(idx),
        upd=specs.upd.of(_input(updates, out.dtype, specs.upd.dtype)),
        outer_map=specs.outer_map.of(outer_map),
        inner_map=specs.inner_map.of(inner_map),
    )


def _launch_kernel(plan: _launch.LaunchPlan, arrays: KernelArrays) -> Array:
    kernel = _runtime.kernel(*plan.kernel)
    # Plain tuples: see _kernels.scatter_kernel.
    args = (tuple(arrays), _scratch(plan.scratch), tuple(plan.params), plan.n_tasks)
    bad: Array = _runtime.launch(kernel, *args)
    return bad


def _destination(call: _call.Call, out: Array | None, shape: tuple[int, ...], dtype: Any) -> Array:
    """Where the kernels write: the caller's ``out`` where ``call`` writes into it
    (``_call.writes_into``), else a new aligned array of ``shape`` and ``dtype`` (JAX takes
    it without a copy)."""
    if call.into_out and out is not None:
        return out
    return empty_aligned(shape, dtype)


def check_before_writing(idx: Array, request: Request) -> None:
    """Raise the contract's IndexError for the first bad index of ``idx`` (``indices`` in C
    order, contiguous) before anything is written: one parallel pass over the indices."""
    flat = idx.reshape(-1)
    n_tasks = _call.bounds_tasks(flat.size, _runtime.num_threads())
    found = _runtime.launch(_runtime.pass_kernel("index_range"), flat, n_tasks)
    size = request.axis_size
    if int(found[:, 0].min()) < -size or int(found[:, 1].max()) >= size:
        raise_first_bad_in_c_order(flat, request)


def raise_first_bad_in_c_order(flat: Array, request: Request) -> None:
    """Raise the contract's IndexError for the first bad index of ``flat``: ``indices`` in
    C order, flattened."""
    size = request.axis_size
    _raise_first_bad(np.flatnonzero((flat < -size) | (flat >= size))[:1], request)


def scatter_elements(request: ScatterRequest) -> Array:
    """Compute ``request`` into its ``out`` where the kernels can write it, else into a new
    array in the layout of ``data``; ``indices`` and ``updates`` stay untouched, and
    ``data`` too unless it is ``out``.

    Nothing is written into the caller's ``out`` before every index is known in bounds.
    Data whose dimensions, reordered, are C-contiguous (Fortran order, a transpose) runs
    as that reordered view, with indices, updates and ``out`` reordered alike: updates that
    meet at one element differ only in their axis position, which keeps its order, so the
    bits are the same, and nothing is copied to C order.
    """
    order = _layout.contiguous_order(request.data)
    if order is None:
        return _scatter_c(request)
    try:
        result = _scatter_c(_layout.reordered(request, order))
    except IndexError:
        # The kernels found the first bad index in their order: report the caller's first.
        raise_first_bad_in_c_order(np.ravel(request.indices, order="C"), request)
        raise
    out: Array | None = request.out
    if out is not None and result.base is out:
        return out
    return _layout.restored(result, order)


def _scatter_c(request: ScatterRequest) -> Array:
    """:func:`scatter_elements` on data in C order, or data whose order cannot be restored:
    the launches of :func:`scatterx_numba._launch.launch_plan`."""
    call = _call.describe_c(request)
    data: Array = request.data
    dtype = call.dtype
    updates: Array = request.updates
    out = _destination(call, request.out, request.shape, dtype)
    if call.family == "bool":
        # bools as canonical 0/1 bytes, whatever bytes the inputs held: the kernels work on
        # uint8, where a raw 2 would survive max and min.
        data, updates = _canonical_bool(data), _canonical_bool(updates)
    if request.n_updates == 0:
        if out is not data:
            np.copyto(out, data)
        return out if dtype == data.dtype else out.astype(data.dtype)
    idx = _input(request.indices, call.index_dtype, call.index_dtype)
    threads = _runtime.num_threads()
    plan = _launch.launch_plan(call, threads)
    if plan.rows_open:
        idx3 = plan.arrays.idx.of(idx)
        if constant_rows((idx3[:, 0], idx3[:, -1])):
            plan = _launch.launch_plan(call, threads, constant_rows=True)
    if plan.bounds_first:
        check_before_writing(idx, request)
    arrays = _kernel_arrays(plan, request, data, updates, out, idx)
    bad = _launch_kernel(plan, arrays)
    fallback = plan.fallback
    if fallback is not None and (bad == _plan.NOT_CONSTANT).any():
        # Some row is not constant after all; ``out`` already holds its copy of data.
        if fallback.bounds_first:
            check_before_writing(idx, request)
        bad = _launch_kernel(fallback, arrays)
    _raise_first_bad(bad, request)
    return out if dtype == data.dtype else out.astype(data.dtype)
