"""The peers of the standard cases (onnxruntime, torch, torch in its deterministic mode,
NumPy, cupyx) and the copy floor; of the ND cases, onnxruntime (on its default threads and
on one) and torch's row calls (``index_add``, ``index_copy``, ``index_reduce``,
``index_select``).

Each is made by :func:`.cases.build_call`, in each of :data:`.cases.MODES`, through
:data:`PEERS`: a new array per call, or data updated in place
(:data:`.cases.IN_PLACE_NOTES`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from .base import FLOOR, BenchCase, Call, Mode, Unavailable, require, synchronised, then
from .nd import result_shape, row_views

#: The name of the peer that is torch under ``torch.use_deterministic_algorithms(True)``.
TORCH_DETERMINISTIC = "torch-deterministic"
#: onnxruntime on one intra-op thread (``intra_op_num_threads=1``): its ScatterND then
#: applies the rows in their order, where its default threads race on shared rows.
ONNXRUNTIME_ONE_THREAD = "onnxruntime-1t"

_TORCH_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}
_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _on_numpy(case: BenchCase, peer: str) -> None:
    if not isinstance(case.data, np.ndarray):
        msg = f"{peer} runs on NumPy arrays, not {type(case.data).__module__} arrays"
        raise Unavailable(msg)


def _elements_only(case: BenchCase, peer: str) -> None:
    if case.op != "scatter_elements":
        msg = f"{peer} times ScatterElements; {case.op} has the numpy backend"
        raise Unavailable(msg)


def _onnx_node(case: BenchCase, reduction: str) -> Any:
    """The model's one node: the case's ``op`` as ONNX names it."""
    from onnx import helper

    if case.op == "gather_nd":
        return helper.make_node("GatherND", ["data", "indices"], ["out"], batch_dims=0)
    if case.op == "gather_elements":
        return helper.make_node("GatherElements", ["data", "indices"], ["out"], axis=case.axis)
    inputs = ["data", "indices", "updates"]
    if case.op == "scatter_nd":
        return helper.make_node("ScatterND", inputs, ["out"], reduction=reduction)
    return helper.make_node("ScatterElements", inputs, ["out"], axis=case.axis, reduction=reduction)


def _onnx_model(case: BenchCase, reduction: str) -> bytes:
    from onnx import helper

    node = _onnx_node(case, reduction)
    roles = {"data": case.data, "indices": case.indices, "updates": case.updates}
    roles = {role: array for role, array in roles.items() if array is not None}
    info = {
        role: helper.make_tensor_value_info(
            role, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape)
        )
        for role, array in roles.items()
    }
    element = helper.np_dtype_to_tensor_dtype(case.data.dtype)
    out = helper.make_tensor_value_info("out", element, list(result_shape(case)))
    graph = helper.make_graph([node], case.op, list(info.values()), [out])
    # IR version 9 is read by every onnxruntime that has opset 18.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    return bytes(model.SerializeToString())


def _onnxruntime(case: BenchCase, reduction: str, mode: Mode, threads: int = 0) -> Call:
    """A one-node model of the case's op (opset 18) on onnxruntime's CPU provider, on
    ``threads`` intra-op threads (0: onnxruntime's default, one per core).

    The same call in both modes: onnxruntime cannot write into an input, and its output
    reuses the buffers of its arena from run to run.
    """
    _on_numpy(case, "onnxruntime")
    require("onnxruntime")
    require("onnx")
    import onnxruntime

    model = _onnx_model(case, reduction)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    feeds = {"data": case.data, "indices": case.indices, "updates": case.updates}
    feeds = {role: array for role, array in feeds.items() if array is not None}
    return lambda: session.run(None, feeds)[0]


def _torch(case: BenchCase, reduction: str, mode: Mode) -> Call:
    """torch's fastest call of each reduction, where the arrays are: ``torch.scatter``
    (none), ``torch.scatter_add`` (add), ``torch.scatter_reduce(include_self=True)`` (the
    others); in place their ``Tensor`` methods ending in ``_`` on data's memory.
    GatherElements: ``torch.gather``, in place with ``out=`` a result of its own. The ND
    cases take torch's row calls (:func:`_torch_rows`)."""
    require("torch")
    import torch

    if case.op == "gather_elements":
        return _torch_gather(case, mode)
    if case.op != "scatter_elements":
        return _torch_rows(case, reduction, mode)
    from torch.utils.dlpack import from_dlpack

    data, indices, updates = (from_dlpack(a) for a in case.arrays)
    new = mode == "new"
    if reduction in ("none", "add"):
        name = "scatter" if reduction == "none" else "scatter_add"
        method = getattr(torch, name) if new else getattr(torch.Tensor, f"{name}_")
        scatter: Call = partial(method, data, case.axis, indices, updates)
    else:
        how = _TORCH_REDUCE[reduction]
        # include_self=True is ONNX's reduction: the value already in data takes part.
        scatter = partial(
            torch.scatter_reduce if new else torch.Tensor.scatter_reduce_,
            data,
            case.axis,
            indices,
            updates,
            how,
            include_self=True,
        )
    return then(scatter, torch.cuda.synchronize) if data.is_cuda else scatter


def _torch_gather(case: BenchCase, mode: Mode) -> Call:
    """``torch.gather`` where the arrays are; in place ``out=`` a result of its own."""
    import torch
    from torch.utils.dlpack import from_dlpack

    data, indices = from_dlpack(case.data), from_dlpack(case.indices)
    gather: Call = partial(torch.gather, data, case.axis, indices)
    if mode == "in-place":
        out = torch.empty_like(indices, dtype=data.dtype)
        gather = partial(torch.gather, data, case.axis, indices, out=out)
    return then(gather, torch.cuda.synchronize) if data.is_cuda else gather


def _torch_rows(case: BenchCase, reduction: str, mode: Mode) -> Call:
    """The ND cases on torch CPU tensors over data's rows (:func:`.nd.row_views`).

    Scatter: ``Tensor.index_copy`` (none), ``index_add`` (add), ``index_reduce(...,
    include_self=True)`` (the others); in place their ``_`` forms on data's memory. Gather:
    indexing ``data[rows]``; in place ``torch.index_select(..., out=)`` into a result of
    its own.
    """
    import torch

    _on_numpy(case, "torch")
    view = row_views(case)
    data, rows = torch.from_numpy(view.data), torch.from_numpy(view.rows)
    shape = result_shape(case)
    new = mode == "new"
    if case.op == "gather_nd":
        if new:
            return lambda: data[rows].reshape(shape)
        out = torch.empty((rows.numel(), data.shape[1]), dtype=data.dtype)
        return lambda: torch.index_select(data, 0, rows, out=out).reshape(shape)
    updates = torch.from_numpy(view.updates)
    if reduction in ("none", "add"):
        name = "index_copy" if reduction == "none" else "index_add"
        method = getattr(torch.Tensor, name if new else f"{name}_")
        return lambda: method(data, 0, rows, updates).reshape(shape)
    method = torch.Tensor.index_reduce if new else torch.Tensor.index_reduce_
    how = {"mul": "prod", "max": "amax", "min": "amin"}[reduction]
    return lambda: method(data, 0, rows, updates, how, include_self=True).reshape(shape)


def _torch_deterministic(case: BenchCase, reduction: str, mode: Mode) -> Call:
    """torch's call of :func:`_torch` under ``torch.use_deterministic_algorithms(True)``,
    the setting restored after each call; :class:`Unavailable` where torch has no
    deterministic implementation of it (it raises RuntimeError: on CUDA, ``mul``)."""
    require("torch")
    import torch

    call = _torch(case, reduction, mode)

    def run() -> Any:
        before = torch.are_deterministic_algorithms_enabled()
        warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
        torch.use_deterministic_algorithms(True)
        try:
            return call()
        finally:
            torch.use_deterministic_algorithms(before, warn_only=warn_only)

    try:
        run()
    except RuntimeError as exc:
        if "deterministic" not in str(exc):
            raise
        line = str(exc).splitlines()[0]
        msg = f"torch has no deterministic {reduction} here: {line}"
        raise Unavailable(msg) from exc
    return run


def _flat_positions(case: BenchCase, xp: Any) -> Any:
    """Where each update lands in data's memory (data is contiguous in some order of its
    dimensions), in the C order of indices: ``ufunc.at`` and cupyx take those, on
    :func:`_flat` of data or of its copy."""
    flat: Any = 0
    ndim = case.indices.ndim
    strides = [stride // case.data.itemsize for stride in case.data.strides]
    for dim, (stride, length) in enumerate(zip(strides, case.indices.shape, strict=True)):
        if dim == case.axis:
            position = case.indices
        else:
            position = xp.arange(length, dtype=xp.int64).reshape(
                [length if d == dim else 1 for d in range(ndim)]
            )
        flat = flat + position * stride
    return flat.reshape(-1)


def _flat(array: Any) -> Any:
    """A 1-D view of ``array``'s memory, C- or Fortran-ordered: writes reach ``array``."""
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        msg = "the peers' flat positions need data in C or Fortran order"
        raise ValueError(msg)
    return array.ravel(order="K")


def _numpy_peer(case: BenchCase, reduction: str, mode: Mode) -> Call:
    """``put_along_axis`` for none; ``ufunc.at`` on flat positions made beforehand otherwise.

    Into a copy of data, or in place into data itself (C-ordered: the benchmark's copy).
    """
    _on_numpy(case, "numpy-peer")
    new = mode == "new"
    if case.op == "gather_elements":
        if not new:
            msg = "in place: NumPy's take_along_axis has no out="
            raise Unavailable(msg)
        return partial(np.take_along_axis, case.data, case.indices, case.axis)
    _elements_only(case, "numpy-peer")
    data, indices, updates, axis = *case.arrays, case.axis
    if reduction == "none":

        def put() -> Any:
            out = data.copy(order="K") if new else data
            np.put_along_axis(out, indices, updates, axis)
            return out

        return put
    # Made here, outside the timing: the peer is measured at its best.
    flat, values, ufunc = _flat_positions(case, np), updates.reshape(-1), _UFUNC[reduction]

    def at() -> Any:
        out = data.copy(order="K") if new else data
        ufunc.at(_flat(out), flat, values)
        return out

    return at


def _cupyx(case: BenchCase, reduction: str, mode: Mode) -> Call:
    """``cupyx.scatter_add/max/min`` on flat positions made beforehand, on the GPU: into a
    copy of data, or in place into data itself."""
    require("cupy")
    import cupy
    import cupyx

    if not isinstance(case.data, cupy.ndarray):
        msg = "cupyx runs on cupy arrays: move the case with case.to(cupy.asarray)"
        raise Unavailable(msg)
    _elements_only(case, "cupyx")
    scatter = {"add": cupyx.scatter_add, "max": cupyx.scatter_max, "min": cupyx.scatter_min}
    if reduction not in scatter:
        msg = f"cupyx has no scatter for {reduction!r}"
        raise Unavailable(msg)
    flat, values, data = _flat_positions(case, cupy), case.updates.reshape(-1), case.data

    new = mode == "new"

    def run() -> Any:
        out = _flat(data.copy(order="K") if new else data)
        scatter[reduction](out, flat, values)
        return out

    return synchronised(run, data)


def _copy_floor(case: BenchCase, reduction: str, mode: Mode) -> Call:
    """Copying the bytes of the three inputs once: no scatter can move less. In place,
    indices and updates only: data need not be copied, and which of its elements a call
    touches depends on the case. A GatherElements: its indices (the result has as many
    elements), in both modes."""
    gather = case.op == "gather_elements"
    sources = case.arrays if mode == "new" and not gather else (case.indices, case.updates)
    sources = tuple(a for a in sources if a is not None)  # a gather has no updates
    targets = tuple(a.copy() for a in sources)

    def run() -> Any:
        for target, source in zip(targets, sources, strict=True):
            target[...] = source
        return targets[0]

    return synchronised(run, case.data)


#: Each peer's maker, by the name its column has.
PEERS: dict[str, Callable[[BenchCase, str, Mode], Call]] = {
    "onnxruntime": _onnxruntime,
    ONNXRUNTIME_ONE_THREAD: partial(_onnxruntime, threads=1),
    "torch": _torch,
    TORCH_DETERMINISTIC: _torch_deterministic,
    "numpy-peer": _numpy_peer,
    "cupyx": _cupyx,
    FLOOR: _copy_floor,
}
