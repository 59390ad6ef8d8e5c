"""One gather on the numba backend: its plan executed (``plan.gather_launch``), raw-bit views."""

from __future__ import annotations

from typing import Any

import numpy as np

from scatterx.backend import GatherRequest

from . import _runtime
from ._checks import constant_rows, raise_first_bad, raise_first_bad_in_c_order
from ._views import destination, kernel_input, maps, readonly
from .plan import call as _call
from .plan import gather_launch as _gather_launch
from .plan import layout as _layout

Array = np.ndarray[Any, Any]


def _source(data: Array, axis: int, source: _call.Arg) -> Array:
    """``data`` as the read-only ``(outer, size, inner * width)`` words of ``source``, in its
    own byte order: where it lies when the plan reads it so (``plan.layout.strided_source``),
    else C-ordered, copied into C order first where it is not."""
    if source.flags is not None:
        view = _layout.strided_source(data, axis, 1)
        assert view is not None
        return view.view(source.dtype)
    if not (data.flags.c_contiguous and data.flags.aligned):
        data = np.array(data, order="C", copy=True)
    return source.of(data)


def _indices(request: GatherRequest, call: _call.Call, index: _call.Arg) -> tuple[Array, Array]:
    """``indices`` as the kernel reads them, ``(outer, rows, inner)``, and flat in their
    memory order (what the check before writing reads): where they lie where the plan
    reads them so (``plan.layout.strided_indices``), else C-ordered, copied there first
    where they are not."""
    if index.flags is not None:
        view = _layout.strided_indices(request.indices, request.axis)
        assert view is not None
        order = _layout.contiguous_order(request.indices)
        return view, readonly(request.indices.transpose(order).reshape(-1))
    indices = kernel_input(request.indices, call.index_dtype, call.index_dtype)
    return index.of(indices), indices.reshape(-1)


def gather_elements(request: GatherRequest, *, rows: Array | None = None) -> Array:
    """Gather ``request`` into its ``out`` where the kernel can write it, else into a new
    C-ordered array of indices' shape and data's dtype.

    ``data`` and ``indices`` stay untouched, and the caller's ``out`` too when an index is
    out of bounds. bool results are canonical 0/1 bytes, whatever bytes data held, as the
    numpy backend gives.
    """
    data: Array = request.data
    shape, index_shape, axis = request.shape, request.index_shape, request.axis
    call = _call.describe(request)
    out = destination(call.into_out, request.out, index_shape, data.dtype)
    if request.n_indices == 0:
        return out
    threads = _runtime.num_threads()
    if rows is not None:
        plan = _gather_launch.gather_launch_plan(call, threads, constant_rows=True)
        outer, n_rows, _ = plan.arrays.idx.shape
        idx = readonly(rows.reshape(outer, n_rows, 1))  # see kernels.gather._whole_rows
        flat, check = idx.reshape(-1), 0  # checked by _nd
    else:
        plan = _gather_launch.gather_launch_plan(call, threads)
        idx, flat = _indices(request, call, plan.arrays.idx)
        if constant_rows((idx[0, 0], idx[-1, -1])):
            plan = _gather_launch.gather_launch_plan(call, threads, constant_rows=True)
        check = plan.check
    specs = plan.arrays
    outer_map, inner_map = maps(shape, index_shape, axis)
    arrays = (
        specs.out.of(out),
        _source(data, axis, specs.data),
        idx,
        specs.outer_map.of(outer_map),
        specs.inner_map.of(inner_map),
    )
    kernel = _runtime.gather_kernel(plan.width)
    bad: Array = _runtime.launch(kernel, arrays, flat, tuple(plan.params), check, plan.n_tasks)
    if check and specs.idx.flags is not None and max(bad.tolist(), default=-1) >= 0:
        # The check's positions are in the indices' memory order: found again in C order.
        raise_first_bad_in_c_order(np.ravel(request.indices), request)
    raise_first_bad(bad, request)
    if data.dtype.kind == "b":
        # Copied raw, then made canonical: a pass over the result, not over all of data.
        np.not_equal(out.view(np.uint8), 0, out=out)
    return out
