"""One callable per implementation of a case: the scatterx backends and the peers.

``make_runner`` raises NotImplementedError for what cannot run here (a library not
installed, a backend unavailable, a reduction a peer lacks): asv then marks that
parameter combination as skipped instead of failing.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np

from ._cases import Arrays

BACKENDS = ("numpy", "numba", "cupy")
PEERS = ("onnxruntime", "torch", "np.put_along_axis", "np.ufunc.at", "copy-floor")
IMPLEMENTATIONS = BACKENDS + PEERS

Runner = Callable[[], Any]

_TORCH_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}
_NUMPY_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def require(module: str) -> None:
    """Skip (NotImplementedError) when ``module`` is not installed."""
    if importlib.util.find_spec(module) is None:
        msg = f"{module} is not installed"
        raise NotImplementedError(msg)


def require_backend(name: str) -> None:
    """Skip when scatterx has no backend ``name`` here, or it is unavailable (with why)."""
    import scatterx

    records = {record.name: record for record in scatterx.backends()}
    if name not in records:
        msg = f"scatterx registers no {name!r} backend in this commit"
        raise NotImplementedError(msg)
    if not records[name].available:
        raise NotImplementedError(records[name].reason)


def make_runner(impl: str, case: Arrays, reduction: str) -> Runner:
    """A callable computing ``case`` with ``reduction`` on ``impl``, warmed up once.

    The warm-up call keeps compilation (numba, NVRTC), session creation and first-touch
    page faults out of the first timed sample, which a quick run's only sample would be.
    """
    makers: dict[str, Callable[[Arrays, str], Runner]] = {
        "numpy": _backend("numpy"),
        "numba": _backend("numba"),
        "cupy": _cupy,
        "onnxruntime": _onnxruntime,
        "torch": _torch,
        "np.put_along_axis": _put_along_axis,
        "np.ufunc.at": _ufunc_at,
        "copy-floor": _copy_floor,
    }
    run = makers[impl](case, reduction)
    run()
    return run


def _backend(name: str) -> Callable[[Arrays, str], Runner]:
    def make(case: Arrays, reduction: str) -> Runner:
        require_backend(name)
        from scatterx import scatter_elements

        data, indices, updates, axis = case.data, case.indices, case.updates, case.axis

        def run() -> Any:
            return scatter_elements(
                data, indices, updates, axis=axis, reduction=reduction, backend=name
            )

        return run

    return make


def _cupy(case: Arrays, reduction: str) -> Runner:
    require_backend("cupy")
    import cupy

    from scatterx import scatter_elements

    data, indices, updates = (cupy.asarray(a) for a in (case.data, case.indices, case.updates))
    axis = case.axis

    def run() -> Any:
        out = scatter_elements(
            data, indices, updates, axis=axis, reduction=reduction, backend="cupy"
        )
        # Kernels are asynchronous: without this the time would be that of the launch.
        cupy.cuda.get_current_stream().synchronize()
        return out

    return run


def _onnxruntime(case: Arrays, reduction: str) -> Runner:
    require("onnxruntime")
    require("onnx")
    import onnxruntime
    from onnx import TensorProto, helper

    node = helper.make_node(
        "ScatterElements",
        ["data", "indices", "updates"],
        ["out"],
        axis=case.axis,
        reduction=reduction,
    )

    def tensor(name: str, array: np.ndarray[Any, Any]) -> Any:
        elem = TensorProto.INT64 if array.dtype == np.int64 else TensorProto.FLOAT
        return helper.make_tensor_value_info(name, elem, list(array.shape))

    graph = helper.make_graph(
        [node],
        "scatter_elements",
        [
            tensor("data", case.data),
            tensor("indices", case.indices),
            tensor("updates", case.updates),
        ],
        [tensor("out", case.data)],
    )
    # IR version 9 is read by every onnxruntime that has opset 18.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    feeds = {"data": case.data, "indices": case.indices, "updates": case.updates}

    def run() -> Any:
        return session.run(None, feeds)[0]

    return run


def _torch(case: Arrays, reduction: str) -> Runner:
    require("torch")
    import torch

    data, indices, updates = (torch.from_numpy(a) for a in (case.data, case.indices, case.updates))
    axis = case.axis
    if reduction == "none":
        return lambda: torch.scatter(data, axis, indices, updates)
    reduce = _TORCH_REDUCE[reduction]
    # include_self=True is ONNX's reduction: the value already in data takes part.
    return lambda: torch.scatter_reduce(data, axis, indices, updates, reduce, include_self=True)


def _put_along_axis(case: Arrays, reduction: str) -> Runner:
    if reduction != "none":
        msg = "np.put_along_axis has no reduction; np.ufunc.at is NumPy's peer for it"
        raise NotImplementedError(msg)
    data, indices, updates, axis = case.data, case.indices, case.updates, case.axis

    def run() -> Any:
        out = data.copy()
        np.put_along_axis(out, indices, updates, axis)
        return out

    return run


def _ufunc_at(case: Arrays, reduction: str) -> Runner:
    if reduction == "none":
        msg = "ufunc.at needs a reduction; np.put_along_axis is NumPy's peer for none"
        raise NotImplementedError(msg)
    ufunc = _NUMPY_UFUNC[reduction]
    data, updates = case.data, case.updates.reshape(-1)
    # Flat positions are made here, outside the timing: the peer is measured at its best.
    grids = np.indices(case.indices.shape, sparse=True)
    grids = [case.indices if d == case.axis else g for d, g in enumerate(grids)]
    flat = np.ravel_multi_index(tuple(grids), data.shape).reshape(-1)

    def run() -> Any:
        out = data.copy()
        ufunc.at(out.reshape(-1), flat, updates)
        return out

    return run


def _copy_floor(case: Arrays, reduction: str) -> Runner:
    """Copying the bytes of the three inputs: no scatter can beat this on one machine."""
    sources = (case.data, case.indices, case.updates)
    targets = tuple(np.empty_like(a) for a in sources)

    def run() -> Any:
        for target, source in zip(targets, sources, strict=True):
            np.copyto(target, source)
        return targets[0]

    return run
