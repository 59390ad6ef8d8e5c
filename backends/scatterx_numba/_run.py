"""One scatter on the numba backend: its plan executed, from the inputs' views to the launch."""

from __future__ import annotations

from typing import Any

import numpy as np

from scatterx.backend import ScatterRequest

from . import _runtime
from ._checks import (
    check_before_writing,
    constant_rows,
    raise_first_bad,
    raise_first_bad_in_c_order,
)
from ._views import (
    NOT_CONSTANT,
    KernelArrays,
    Strategy,
    destination,
    kernel_input,
    maps,
    readonly,
)
from .plan import call as _call
from .plan import launch as _launch
from .plan import layout as _layout

Array = np.ndarray[Any, Any]


def _canonical_bool(array: Array) -> Array:
    """A C-ordered bool array of 0/1 bytes: any nonzero byte is True."""
    return np.not_equal(array.view(np.uint8), 0, order="C")


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
    dst, src = out.reshape(-1).view(np.uint8), readonly(data.reshape(-1).view(np.uint8))
    _runtime.launch(_runtime.pass_kernel("copy_words"), dst, src, n_tasks)


def _kernel_arrays(
    plan: _launch.LaunchPlan,
    request: ScatterRequest,
    data: Array,
    updates: Array,
    out: Array,
    idx: Array,
) -> KernelArrays:
    """The arrays of the call as ``plan`` has them (``idx`` already 3-D); ``out`` gets data
    first where the plan says so."""
    if plan.copy_first is _launch.Copy.NUMPY:
        np.copyto(out, data)
    elif plan.copy_first is _launch.Copy.PASS:
        _copy_words(out, data, _launch.copy_tasks(plan.threads))
    specs = plan.arrays
    outer_map, inner_map = maps(request.shape, request.index_shape, request.axis)
    return KernelArrays(
        out=specs.out.of(out),
        data=specs.data.of(data if plan.fused_copy else out),
        idx=idx,
        upd=specs.upd.of(kernel_input(updates, out.dtype, specs.upd.dtype)),
        outer_map=specs.outer_map.of(outer_map),
        inner_map=specs.inner_map.of(inner_map),
    )


def _launch_kernel(plan: _launch.LaunchPlan, arrays: KernelArrays) -> Array:
    kernel = _runtime.kernel(*plan.kernel)
    # Plain tuples: see kernels.scatter.scatter_kernel.
    args = (tuple(arrays), _scratch(plan.scratch), tuple(plan.params), plan.n_tasks)
    bad: Array = _runtime.launch(kernel, *args)
    return bad


def scatter_elements(request: ScatterRequest, *, rows: Array | None = None) -> Array:
    """Compute ``request`` into its ``out`` where the kernels can write it, else into a new
    array in the layout of ``data``; ``indices`` and ``updates`` stay untouched, and
    ``data`` too unless it is ``out``.

    Nothing is written into the caller's ``out`` before every index is known in bounds.
    Data whose dimensions, reordered, are C-contiguous (Fortran order, a transpose) runs
    as that reordered view, with indices, updates and ``out`` reordered alike: updates that
    meet at one element differ only in their axis position, which keeps its order, so the
    bits are the same, and nothing is copied to C order.

    ``rows`` (``scatterx_numba._nd``): each row of ``indices`` along the axis holds one
    value, these (C-ordered int64, one per row), every one known in bounds; where the plan
    runs whole rows, the kernel reads them, not ``indices``.
    """
    if _staged(request):
        result = scatter_elements(request._replace(out=None), rows=rows)
        data: Array = request.data  # out itself
        np.copyto(data, result)  # every index was good: nothing raised
        return data
    order = _layout.contiguous_order(request.data)
    if order is None:
        return _scatter_c(request, rows)
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


#: An update in place runs as a new result copied back into data where data is at most
#: this fraction of the indices' bytes (:func:`_staged`).
STAGE_FRACTION = 0.25


def _staged(request: ScatterRequest) -> bool:
    """Whether an update in place runs faster as a new result copied back into data.

    In place, a pass checks every index before the kernels write data; a new result is
    checked inside the kernels, and a bad index leaves only the discarded result written.
    Where data is small beside the indices (1d-histogram: 256 KiB against 32 MiB of
    int64), copying data twice costs less than reading the indices once more.
    """
    out = request.out
    if out is None or out is not request.data:
        return False
    return bool(out.nbytes <= STAGE_FRACTION * request.indices.nbytes)


def _scatter_c(request: ScatterRequest, rows: Array | None = None) -> Array:
    """:func:`scatter_elements` on data in C order, or data whose order cannot be restored:
    the launches of :func:`scatterx_numba.plan.launch.launch_plan`."""
    call = _call.describe_c(request)
    data: Array = request.data
    dtype = call.dtype
    updates: Array = request.updates
    out = destination(call.into_out, request.out, request.shape, dtype)
    if call.family == "bool":
        # bools as canonical 0/1 bytes, whatever bytes the inputs held: the kernels work on
        # uint8, where a raw 2 would survive max and min.
        data, updates = _canonical_bool(data), _canonical_bool(updates)
    if request.n_updates == 0:
        if out is not data:
            np.copyto(out, data)
        return out if dtype == data.dtype else out.astype(data.dtype)
    threads = _runtime.num_threads()
    plan = _launch.launch_plan(call, threads)
    if rows is not None and plan.rows_open:
        plan = _launch.launch_plan(call, threads, constant_rows=True)
    if rows is not None and plan.strategy.strategy == Strategy.ROWS:
        # One index per row, known in bounds: no bounds pass, and a row of one is constant.
        outer, n_rows, _ = plan.arrays.idx.shape
        one_per_row = readonly(rows.reshape(outer, n_rows, 1))
        bad = _launch_kernel(plan, _kernel_arrays(plan, request, data, updates, out, one_per_row))
        raise_first_bad(bad, request)
        return out if dtype == data.dtype else out.astype(data.dtype)
    idx = kernel_input(request.indices, call.index_dtype, call.index_dtype)
    idx3 = plan.arrays.idx.of(idx)
    if plan.rows_open and constant_rows((idx3[:, 0], idx3[:, -1])):
        plan = _launch.launch_plan(call, threads, constant_rows=True)
    if plan.bounds_first:
        check_before_writing(idx, request)
    arrays = _kernel_arrays(plan, request, data, updates, out, idx3)
    bad = _launch_kernel(plan, arrays)
    fallback = plan.fallback
    if fallback is not None and (bad == NOT_CONSTANT).any():
        # Some row is not constant after all; ``out`` already holds its copy of data.
        if fallback.bounds_first:
            check_before_writing(idx, request)
        bad = _launch_kernel(fallback, arrays)
    raise_first_bad(bad, request)
    return out if dtype == data.dtype else out.astype(data.dtype)
