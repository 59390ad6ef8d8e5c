"""One call on the numba backend: views and layouts, the plan, the launch, the bounds error."""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from scatterx.backend import Request, ScatterRequest, empty_aligned, out_of_bounds_error

from . import _layout, _plan, _runtime

Array = np.ndarray[Any, Any]

#: How each dtype is stored in the kernels: bool as uint8 0/1, float16 and bfloat16 as
#: their uint16 bits (their reductions decode to float32 and round back).
_FAMILY = {"bool": "bool", "float16": "half", "bfloat16": "bf16"}
_STORAGE: dict[str, np.dtype[Any]] = {
    "bool": np.dtype(np.uint8),
    "half": np.dtype(np.uint16),
    "bf16": np.dtype(np.uint16),
}


class KernelArrays(NamedTuple):
    """The arrays of a call, as the kernels see them (shapes: see :mod:`scatterx_numba._tasks`)."""

    out: Array  # (outer, size, inner), written
    data: Array  # read-only, shaped as out: data, or out itself when it holds the copy
    idx: Array  # (outer', rows, inner'), read-only
    upd: Array  # as idx, in storage form
    outer_map: Array  # flat outer position of out for each of idx
    inner_map: Array  # flat inner position of out for each of idx


class KernelParams(NamedTuple):
    """The scalars of a kernel launch."""

    band: int  # columns: inner positions per task
    inner_same: bool  # columns: indices' inner shape is data's (no inner_map needed)
    copy: bool  # the tasks copy data into out themselves


def _native(dtype: np.dtype[Any]) -> np.dtype[Any]:
    return dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype


def _kernel_ready(array: Array, dtype: np.dtype[Any]) -> bool:
    """Whether ``array`` can be handed over as is: C order, native, aligned."""
    flags = array.flags
    return bool(flags.c_contiguous and flags.aligned and array.dtype == dtype)


def _readonly(array: Array) -> Array:
    """A read-only view: every input then has one numba type, so one compiled signature."""
    view = array.view()
    view.flags.writeable = False
    return view


def _input(array: Array, dtype: np.dtype[Any], storage: np.dtype[Any]) -> Array:
    """``array`` as C-ordered native ``dtype`` viewed as ``storage``; copies only if needed."""
    if not _kernel_ready(array, dtype):
        array = np.array(array, dtype=dtype, order="C", copy=True)
    return _readonly(array.view(storage))


def _maps(
    data_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int
) -> tuple[Array, Array]:
    """Flat outer and inner positions of data for each flat outer/inner position of indices."""
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


def _three_d(array: Array, shape: tuple[int, ...], axis: int) -> Array:
    outer, rows, inner = _plan.split(shape, axis)
    return array.reshape(outer, rows, inner)


def _raise_first_bad(bad: Array, request: Request) -> None:
    """Raise the contract's IndexError for the first out-of-bounds index in C order."""
    found = bad[bad >= 0]
    if found.size:
        position = tuple(int(p) for p in np.unravel_index(int(found.min()), request.index_shape))
        value = int(request.indices[position])
        raise out_of_bounds_error(value, position, request.axis, request.axis_size)


#: ``none`` moves bits: every dtype of one width runs as the unsigned integer of that width,
#: so one compiled signature serves int32, uint32 and float32 alike.
_BITS: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.uint8),
    2: np.dtype(np.uint16),
    4: np.dtype(np.uint32),
    8: np.dtype(np.uint64),
}


def _storage(family: str, dtype: np.dtype[Any], reduction: str) -> np.dtype[Any]:
    """The dtype the kernels see: see ``_STORAGE``, and ``_BITS`` for ``none``.

    Wrapping add and mul give the same bits on signed and unsigned integers of one width
    (two's complement), so signed ones run as unsigned: one compiled signature for both.
    """
    if reduction == "none" or (reduction in ("add", "mul") and dtype.kind == "i"):
        return _BITS.get(dtype.itemsize, dtype)  # complex128 has no 16-byte integer
    return _STORAGE.get(family, dtype)


def _canonical_bool(array: Array) -> Array:
    """A C-ordered bool array of 0/1 bytes: any nonzero byte is True."""
    return np.not_equal(array.view(np.uint8), 0, order="C")


def _regroupable(family: str, reduction: str, dtype: np.dtype[Any]) -> bool:
    """Whether the reduction's fold may be split into segments and merged (see _segments)."""
    if reduction in ("none", "max", "min") or family == "bool":
        return True
    return family == "plain" and dtype.kind in "iu"


def _constant_rows(indices: Array, axis: int) -> bool:
    """Whether the first and last index rows each hold one value: an embedding-grad shape."""
    for end in (0, -1):
        row = indices[(slice(None),) * axis + (end,)].reshape(-1)
        # The ends of a row first: they turn random rows away without a full compare.
        if row.size < 2 or row[0] != row[-1] or not bool((row == row[0]).all()):
            return False
    return True


def _identity(family: str, reduction: str, dtype: np.dtype[Any]) -> Any:
    """The value that ``op(x, identity)`` leaves bit for bit as ``x``, in storage form."""
    if family in ("half", "bf16"):
        bits = {"half": (0xFC00, 0x7C00), "bf16": (0xFF80, 0x7F80)}[family]  # -inf, +inf
        return bits[reduction == "min"]
    if family == "bool":
        return int(reduction in ("mul", "min"))
    if reduction in ("add", "mul"):
        return int(reduction == "mul")
    if dtype.kind == "f":
        return -np.inf if reduction == "max" else np.inf
    info = np.iinfo(dtype)
    return info.min if reduction == "max" else info.max


_UNUSED: dict[np.dtype[Any], Array] = {}


def _unused(dtype: np.dtype[Any]) -> Array:
    """A (1, 1) placeholder for a scratch array the strategy does not use (never written)."""
    found = _UNUSED.get(dtype)
    if found is None:
        found = _UNUSED[dtype] = np.empty((1, 1), dtype)
    return found


def _owner_rows(plan: _plan.Plan, request: ScatterRequest, family: str, storage: Any) -> Array:
    """Owners: each task's copy of its own rows, the largest share times the outer count."""
    outer, size, inner = _plan.split(request.shape, request.axis)
    return np.empty((plan.n_tasks, outer * -(-size // plan.n_tasks) * inner + 1), storage)


def _segment_partials(
    plan: _plan.Plan, request: ScatterRequest, family: str, storage: Any
) -> Array:
    """Segments: each task's partial, which starts at the reduction's identity; for
    ``none``, each task's last positions, which start at -1 (int32 unless that could
    overflow: half the memory traffic).

    The start values spare the kernel a mark of which elements a segment reached.
    """
    total, reduction = math.prod(request.shape), request.reduction
    if reduction != "none":
        identity = _identity(family, reduction, _native(request.data.dtype))
        return np.full((plan.n_tasks, total), identity, storage)
    wide = request.n_updates > np.iinfo(np.int32).max
    return np.full((plan.n_tasks, total), -1, np.int64 if wide else np.int32)


def _row_targets(plan: _plan.Plan, request: ScatterRequest, family: str, storage: Any) -> Array:
    """Rows: the target row of each index row."""
    outer, rows, _ = _plan.split(request.index_shape, request.axis)
    return np.empty((1, outer * rows), np.int64)


def _binned_bins(plan: _plan.Plan, request: ScatterRequest, family: str, storage: Any) -> Array:
    """Binned: one row of the bins' positions (uint32, in the storage's bytes), the
    column's copy and the bins' values, ``plan.band`` bins (one wave's updates at most).

    The positions get a cache line more than they need: regions a round number of pages
    apart made some wave lengths several times slower (docs/backends/numba.md).
    """
    capacity = plan.band
    position_elements = -(-(capacity * 4 + 64) // storage.itemsize)
    return np.empty((1, position_elements + request.shape[request.axis] + capacity), storage)


def _no_scratch(plan: _plan.Plan, request: ScatterRequest, family: str, storage: Any) -> Array:
    """Columns: none, a placeholder."""
    return _unused(storage)


#: Each strategy's scratch array: ``(plan, request, family, storage dtype) -> 2-D array``.
_SCRATCH = {
    _plan.Strategy.COLUMNS: _no_scratch,
    _plan.Strategy.OWNERS: _owner_rows,
    _plan.Strategy.SEGMENTS: _segment_partials,
    _plan.Strategy.ROWS: _row_targets,
    _plan.Strategy.BINNED: _binned_bins,
}


def _fused_copy(plan: _plan.Plan, request: ScatterRequest, data_ready: bool) -> bool:
    """Whether the kernel's tasks copy data themselves (in parallel, each its own part).

    Column tasks copy only when each owns whole contiguous slabs of the output: indices as
    long as data off the axis, bands of whole rows. Narrower bands would copy their part
    as strided reads, slower than one thread's contiguous copy before the launch.
    """
    if not data_ready or plan.strategy == _plan.Strategy.OWNERS:
        return False
    axis, shape, index_shape = request.axis, request.shape, request.index_shape
    return plan.strategy != _plan.Strategy.COLUMNS or (
        shape[:axis] == index_shape[:axis]
        and shape[axis + 1 :] == index_shape[axis + 1 :]
        and plan.band == math.prod(shape[axis + 1 :])
    )


#: Below this many bytes one thread's copy beats a parallel launch.
PARALLEL_COPY_BYTES = 1 << 22


def _copy_before(out: Array, data: Array) -> None:
    """``out[...] = data`` before the launch: on every thread where both are C-ordered,
    aligned and large (see :mod:`scatterx_numba._passes`), else by NumPy."""
    n_threads = _runtime.num_threads()
    if (
        n_threads == 1
        or out.nbytes < PARALLEL_COPY_BYTES
        or not (_kernel_ready(data, out.dtype) and out.flags.c_contiguous)
    ):
        np.copyto(out, data)
        return
    # As bytes: one compiled signature for every dtype (the loop vectorises all the same).
    dst, src = out.reshape(-1).view(np.uint8), _readonly(data.reshape(-1).view(np.uint8))
    _runtime.launch(_runtime.pass_kernel("copy_words"), dst, src, 4 * n_threads)


def _kernel_arrays(
    request: ScatterRequest,
    data: Array,
    updates: Array,
    out: Array,
    storage: Any,
    copy: bool,
    idx: Array,
) -> KernelArrays:
    """The arrays of the call in storage form; without ``copy``, ``out`` gets data now
    (unless it is data: in place)."""
    shape, index_shape, axis = request.shape, request.index_shape, request.axis
    dtype = out.dtype
    out3 = _three_d(out.view(storage), shape, axis)
    if copy:
        source = _three_d(_readonly(data.view(storage)), shape, axis)
    else:
        if out is not data:
            _copy_before(out, data)
        source = _readonly(out3)
    outer_map, inner_map = _maps(shape, index_shape, axis)
    return KernelArrays(
        out=out3,
        data=source,
        idx=_three_d(idx, index_shape, axis),
        upd=_three_d(_input(updates, dtype, storage), index_shape, axis),
        outer_map=outer_map,
        inner_map=inner_map,
    )


def _launch(
    request: ScatterRequest, plan: _plan.Plan, arrays: KernelArrays, family: str, copy: bool
) -> Array:
    shape, index_shape, axis = request.shape, request.index_shape, request.axis
    inner_same = shape[axis + 1 :] == index_shape[axis + 1 :]
    params = KernelParams(plan.band, inner_same, copy)
    kernel = _runtime.kernel(plan.strategy, family, request.reduction)
    scratch = _SCRATCH[plan.strategy](plan, request, family, arrays.out.dtype)
    # Plain tuples: see _kernels.scatter_kernel.
    bad: Array = _runtime.launch(kernel, tuple(arrays), scratch, tuple(params), plan.n_tasks)
    return bad


def writes_into(out: Array | None, dtype: np.dtype[Any]) -> bool:
    """Whether the kernels write into the caller's ``out`` as it is: C order, ``dtype``,
    aligned, writable."""
    return out is not None and _kernel_ready(out, dtype) and bool(out.flags.writeable)


def _destination(out: Array | None, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Array:
    """Where the kernels write: the caller's ``out`` where :func:`writes_into` it, else a
    new aligned array of ``shape`` (JAX takes it without a copy)."""
    if out is not None and writes_into(out, dtype):
        return out
    return empty_aligned(shape, dtype)


def _writes_after_bounds(plan: _plan.Plan, copy: bool, in_place: bool) -> bool:
    """Whether the launch writes nothing into ``out`` before every index is known in bounds.

    So for segments and binned (the partials, or the bins, are merged in the last pass,
    data's copy with them) and, in place, for rows and owners (their first pass, or each
    task's write-back, comes after the checks). Columns write as they go; a copy of data
    before the launch (neither in place nor by the tasks) writes first; rows copy data in
    their first pass.
    """
    if not in_place and not copy:
        return False
    if plan.strategy in (_plan.Strategy.SEGMENTS, _plan.Strategy.BINNED):
        return True
    return in_place and plan.strategy in (_plan.Strategy.ROWS, _plan.Strategy.OWNERS)


def check_before_writing(idx: Array, request: Request) -> None:
    """Raise the contract's IndexError for the first bad index of ``idx`` (``indices`` in C
    order, contiguous) before anything is written: one parallel pass over the indices."""
    flat = idx.reshape(-1)
    n_tasks = max(1, min(4 * _runtime.num_threads(), flat.size // (1 << 16)))
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
    """:func:`scatter_elements` on data in C order, or data whose order cannot be restored."""
    data: Array = request.data
    dtype = _native(data.dtype)
    family = _FAMILY.get(request.dtype_key, "plain")
    updates: Array = request.updates
    out = _destination(request.out, request.shape, dtype)
    if family == "bool":
        # bools as canonical 0/1 bytes, whatever bytes the inputs held: the kernels work on
        # uint8, where a raw 2 would survive max and min.
        data, updates = _canonical_bool(data), _canonical_bool(updates)
    if request.n_updates == 0:
        if out is not data:
            np.copyto(out, data)
        return out if dtype == data.dtype else out.astype(data.dtype)
    storage = _storage(family, dtype, request.reduction)
    shape, index_shape, axis = request.shape, request.index_shape, request.axis
    choose = partial(
        _plan.plan,
        shape,
        index_shape,
        axis,
        storage.itemsize,
        _runtime.num_threads(),
        regroupable=_regroupable(family, request.reduction, dtype),
    )
    plan = choose(constant_rows=partial(_constant_rows, request.indices, axis))
    index_dtype = _native(request.indices.dtype)
    idx = _input(request.indices, index_dtype, index_dtype)
    copy = out is not data and _fused_copy(plan, request, _kernel_ready(data, dtype))
    checked = out is not request.out or _writes_after_bounds(plan, copy, out is data)
    if not checked:
        check_before_writing(idx, request)
    arrays = _kernel_arrays(request, data, updates, out, storage, copy, idx)
    bad = _launch(request, plan, arrays, family, copy)
    if plan.strategy == _plan.Strategy.ROWS and (bad == _plan.NOT_CONSTANT).any():
        # Some row is not constant after all; ``out`` already holds its copy of data.
        # The first pass stopped at that row: the indices past it are not checked yet.
        if not checked:
            check_before_writing(idx, request)
        bad = _launch(request, choose(constant_rows=False), arrays, family, False)
    _raise_first_bad(bad, request)
    return out if dtype == data.dtype else out.astype(data.dtype)
