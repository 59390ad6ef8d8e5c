"""One gather on the numba backend: its plan executed (``plan.gather_launch``), raw-bit views."""

from __future__ import annotations

from typing import Any

import numpy as np

from scatterx.backend import GatherRequest

from . import _runtime
from ._checks import check_before_writing, constant_rows, raise_first_bad
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
    else:
        index_dtype = call.index_dtype
        indices = kernel_input(request.indices, index_dtype, index_dtype)
        plan = _gather_launch.gather_launch_plan(call, threads)
        idx = plan.arrays.idx.of(indices)
        if constant_rows((idx[0, 0], idx[-1, -1])):
            plan = _gather_launch.gather_launch_plan(call, threads, constant_rows=True)
        if plan.bounds is not None:
            check_before_writing(indices, request)
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
    bad: Array = _runtime.launch(kernel, arrays, tuple(plan.params), plan.n_tasks)
    raise_first_bad(bad, request)
    if data.dtype.kind == "b":
        # Copied raw, then made canonical: a pass over the result, not over all of data.
        np.not_equal(out.view(np.uint8), 0, out=out)
    return out
