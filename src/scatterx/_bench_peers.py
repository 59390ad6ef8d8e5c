"""The standard cases of performance.md and the peers timed against scatterx's backends."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]
Call = Callable[[], Any]

CASE_NAMES = ("square-random", "1d-histogram", "embedding-grad", "last-axis-sparse")
_TORCH_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}
_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


@dataclass(frozen=True)
class BenchCase:
    """One standard case: seeded arrays and the axis."""

    name: str
    data: Array
    indices: Array
    updates: Array
    axis: int


def _scaled(n: int, size: float) -> int:
    return max(1, round(n * size))


def make_case(name: str, size: float = 1.0, seed: int = 0) -> BenchCase:
    """Build a standard case; ``size`` scales its number of elements (about linearly)."""
    rng = np.random.default_rng(seed)
    if name == "square-random":
        rows = _scaled(4096, size)
        data = rng.standard_normal((rows, 4096), dtype=np.float32)
        indices = rng.integers(0, rows, size=(rows, 4096), dtype=np.int64)
        axis = 0
    elif name == "1d-histogram":
        bins, n = _scaled(65536, size), _scaled(4194304, size)
        data = rng.standard_normal(bins, dtype=np.float32)
        indices = rng.integers(0, bins, size=n, dtype=np.int64)
        axis = 0
    elif name == "embedding-grad":
        vocab, tokens = _scaled(30000, size), _scaled(16384, size)
        data = rng.standard_normal((vocab, 256), dtype=np.float32)
        ids = rng.integers(0, vocab, size=(tokens, 1), dtype=np.int64)
        indices = np.ascontiguousarray(np.broadcast_to(ids, (tokens, 256)))
        axis = 0
    elif name == "last-axis-sparse":
        rows = _scaled(8192, size)
        data = rng.standard_normal((rows, 1024), dtype=np.float32)
        indices = rng.integers(0, 1024, size=(rows, 64), dtype=np.int64)
        axis = 1
    else:
        msg = f"unknown case {name!r}; the cases are {', '.join(CASE_NAMES)}"
        raise ValueError(msg)
    updates = rng.standard_normal(indices.shape, dtype=np.float32)
    return BenchCase(name, data, indices, updates, axis)


def copy_floor(case: BenchCase) -> Call:
    """Copying the bytes the call must at least read and write, single-threaded."""
    targets = [np.empty_like(a) for a in (case.data, case.indices, case.updates)]
    sources = (case.data, case.indices, case.updates)

    def run() -> None:
        for target, source in zip(targets, sources, strict=True):
            np.copyto(target, source)

    return run


def _flat_positions(case: BenchCase) -> Array:
    grid: list[Array] = list(np.indices(case.indices.shape, sparse=True))
    grid[case.axis] = case.indices
    return np.ravel_multi_index(tuple(grid), case.data.shape).reshape(-1)


def numpy_peer(case: BenchCase, reduction: str) -> Call:
    """``put_along_axis`` for none; ``ufunc.at`` on precomputed flat positions otherwise."""
    data, indices, updates, axis = case.data, case.indices, case.updates, case.axis
    if reduction == "none":

        def put() -> Array:
            out = data.copy()
            np.put_along_axis(out, indices, updates, axis)
            return out

        return put
    flat, values, ufunc = _flat_positions(case), updates.reshape(-1), _UFUNC[reduction]

    def at() -> Array:
        out = data.copy()
        ufunc.at(out.reshape(-1), flat, values)
        return out

    return at


def torch_peer(case: BenchCase, reduction: str) -> Call | None:
    """``torch.scatter`` / ``torch.scatter_reduce(include_self=True)`` on CPU tensors."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    data, indices, updates = (torch.from_numpy(a) for a in (case.data, case.indices, case.updates))
    axis = case.axis
    if reduction == "none":
        return lambda: torch.scatter(data, axis, indices, updates)
    how = _TORCH_REDUCE[reduction]
    return lambda: torch.scatter_reduce(data, axis, indices, updates, how, include_self=True)


def _onnx_model(case: BenchCase, reduction: str) -> bytes:
    from onnx import TensorProto, helper

    node = helper.make_node(
        "ScatterElements",
        ["data", "indices", "updates"],
        ["out"],
        axis=case.axis,
        reduction=reduction,
    )
    shapes = {"data": case.data.shape, "indices": case.indices.shape, "out": case.data.shape}
    kinds = {"data": TensorProto.FLOAT, "indices": TensorProto.INT64, "out": TensorProto.FLOAT}
    shapes["updates"], kinds["updates"] = case.updates.shape, TensorProto.FLOAT
    info = {k: helper.make_tensor_value_info(k, kinds[k], list(shapes[k])) for k in shapes}
    graph = helper.make_graph(
        [node], "scatter", [info["data"], info["indices"], info["updates"]], [info["out"]]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return bytes(model.SerializeToString())


def onnxruntime_peer(case: BenchCase, reduction: str) -> Call | None:
    """A one-node ScatterElements (opset 18) model on onnxruntime's CPU provider."""
    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
        return None
    import onnxruntime as ort

    session = ort.InferenceSession(_onnx_model(case, reduction), providers=["CPUExecutionProvider"])
    feeds = {"data": case.data, "indices": case.indices, "updates": case.updates}
    return lambda: session.run(None, feeds)


PEERS: dict[str, Callable[[BenchCase, str], Call | None]] = {
    "onnxruntime": onnxruntime_peer,
    "torch": torch_peer,
    "numpy-peer": numpy_peer,
}
