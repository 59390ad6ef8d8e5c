"""The standard cases of performance.md and every contestant timed on them, for all harnesses.

``python -m scatterx bench``, the asv suites of ``asv_bench/`` and ``tools/gpu_bench.py``
build their cases and contestants here only: one case name means the same data everywhere.
A contestant that cannot run here raises :class:`Unavailable`, a NotImplementedError (asv
reports it as a skip), whose message says why and what to install.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from scatterx import BackendError, backends, scatter_elements
from scatterx._registry import registered

Call = Callable[[], Any]

REDUCTIONS = ("none", "add", "mul", "max", "min")
BACKENDS = ("numpy", "numba", "cupy")
CPU_PEERS = ("onnxruntime", "torch", "numpy-peer")
FLOOR = "copy-floor"

BENCH_EXTRA = "pip install 'scatterx[bench]'"
_INSTALL = {
    "onnx": BENCH_EXTRA,
    "onnxruntime": BENCH_EXTRA,
    "torch": "pip install torch",
    "cupy": "pip install 'scatterx[cupy]'",
}
_TORCH_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}
_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


class Shapes(NamedTuple):
    """A standard case at full size (performance.md's table)."""

    data: tuple[int, ...]
    indices: tuple[int, ...]
    axis: int
    one_id_per_row: bool = False


CASES = {
    "square-random": Shapes((4096, 4096), (4096, 4096), 0),
    "1d-histogram": Shapes((65536,), (4194304,), 0),
    "embedding-grad": Shapes((30000, 256), (16384, 256), 0, one_id_per_row=True),
    "last-axis-sparse": Shapes((8192, 1024), (8192, 64), 1),
}
CASE_NAMES = tuple(CASES)
# asv's sizes, as the scale of make_case. "small" keeps each case's character at 1/32 of
# the bytes with at least 16384 updates: enough that automatic choice hands the call to the
# numba backend (scatterx_numba.SMALL_CALL_UPDATES).
SIZES = {"small": 1 / 32, "full": 1.0}


@dataclass(frozen=True)
class BenchCase:
    """One case's inputs (float32 data and updates, int64 indices) and its axis."""

    name: str
    data: Any
    indices: Any
    updates: Any
    axis: int

    @property
    def arrays(self) -> tuple[Any, Any, Any]:
        """``(data, indices, updates)``."""
        return self.data, self.indices, self.updates

    def to(self, convert: Callable[[Any], Any]) -> BenchCase:
        """The same case with each array passed through ``convert`` (``cupy.asarray``)."""
        data, indices, updates = (convert(a) for a in self.arrays)
        return replace(self, data=data, indices=indices, updates=updates)


def make_case(name: str, scale: float = 1.0) -> BenchCase:
    """Build the standard case ``name``, its leading dimensions scaled by ``scale``.

    The seed comes from the name alone: a case is the same whichever others are built, in
    every harness. Values lie in [0.5, 1.5]: long products under ``mul`` then neither
    overflow nor reach float32's subnormals, whose slow arithmetic would measure the CPU.
    """
    if name not in CASES:
        msg = f"unknown case {name!r}; the cases are {', '.join(CASE_NAMES)}"
        raise ValueError(msg)
    spec = CASES[name]
    data_shape, index_shape = _scaled(spec.data, scale), _scaled(spec.indices, scale)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    data = rng.random(data_shape, dtype=np.float32) + np.float32(0.5)
    updates = rng.random(index_shape, dtype=np.float32) + np.float32(0.5)
    extent = data_shape[spec.axis]
    if spec.one_id_per_row:
        # Embedding backward: each row of indices is one token id repeated along the row.
        ids = rng.integers(0, extent, size=(index_shape[0], 1), dtype=np.int64)
        indices = np.ascontiguousarray(np.broadcast_to(ids, index_shape))
    else:
        indices = rng.integers(0, extent, size=index_shape, dtype=np.int64)
    return BenchCase(name, data, indices, updates, spec.axis)


def _scaled(shape: tuple[int, ...], scale: float) -> tuple[int, ...]:
    return (max(1, round(shape[0] * scale)), *shape[1:])


def spec_example() -> BenchCase:
    """The operator text's 3x3 example: nearly no work, so the front-end's fixed cost."""
    data = np.zeros((3, 3), dtype=np.float32)
    indices = np.array([[1, 0, 2], [0, 2, 1]], dtype=np.int64)
    updates = np.array([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], dtype=np.float32)
    return BenchCase("spec-example", data, indices, updates, 0)


class Unavailable(NotImplementedError):
    """A contestant that cannot run here; the message says why (and what to install)."""


def require(module: str) -> None:
    """Raise :class:`Unavailable` when ``module`` is not installed, naming the install."""
    if importlib.util.find_spec(module) is None:
        msg = f"{module} is not installed ({_INSTALL.get(module, f'pip install {module}')})"
        raise Unavailable(msg)


def require_backend(name: str) -> None:
    """Raise :class:`Unavailable` when scatterx has no usable backend ``name`` here."""
    records = {record.name: record for record in backends()}
    if name not in records:
        msg = f"scatterx registers no {name!r} backend here"
        raise Unavailable(msg)
    if not records[name].available:
        msg = f"backend {name}: {records[name].reason}"
        raise Unavailable(msg)


def make_call(contestant: str, case: BenchCase, reduction: str) -> Call:
    """A callable computing ``case`` with ``reduction`` on ``contestant``, warmed up once.

    ``contestant`` is a peer, :data:`FLOOR` or the name of a scatterx backend. Peers run
    where the case's arrays are (:meth:`BenchCase.to`); a backend receives them through its
    ``from_numpy``. A call on a GPU returns once the device has finished. The warm-up keeps
    compilation (numba, NVRTC), session creation and first-touch page faults out of the
    first timed sample, which a quick run's only sample would be.
    """
    make = _PEERS.get(contestant)
    call = make(case, reduction) if make is not None else _backend(contestant, case, reduction)
    try:
        call()
    except BackendError as exc:  # the backend declines this dtype, reduction or array type
        raise Unavailable(str(exc)) from exc
    return call


def median_ms(call: Call, repeat: int) -> float:
    """Median milliseconds of ``repeat`` calls in a row, after one untimed call.

    The untimed call lets the thread pools of the contestant timed before settle down.
    """
    call()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def synchronised(call: Call, array: Any) -> Call:
    """``call``, returning once the GPU holding ``array`` is done (launches are asynchronous)."""
    cupy = sys.modules.get("cupy")
    if cupy is None or not isinstance(array, cupy.ndarray):
        return call
    return _then(call, cupy.cuda.get_current_stream().synchronize)


def _then(call: Call, wait: Callable[[], object]) -> Call:
    def run() -> Any:
        out = call()
        wait()
        return out

    return run


def _backend(name: str, case: BenchCase, reduction: str) -> Call:
    require_backend(name)
    from_numpy = getattr(registered()[name], "from_numpy", None)
    if from_numpy is not None and isinstance(case.data, np.ndarray):
        case = case.to(from_numpy)
    data, indices, updates = case.arrays
    kwargs: dict[str, Any] = {"axis": case.axis, "reduction": reduction, "backend": name}
    return synchronised(lambda: scatter_elements(data, indices, updates, **kwargs), data)


def _on_numpy(case: BenchCase, peer: str) -> None:
    if not isinstance(case.data, np.ndarray):
        msg = f"{peer} runs on NumPy arrays, not {type(case.data).__module__} arrays"
        raise Unavailable(msg)


def _onnx_model(case: BenchCase, reduction: str) -> bytes:
    from onnx import TensorProto, helper

    node = helper.make_node(
        "ScatterElements",
        ["data", "indices", "updates"],
        ["out"],
        axis=case.axis,
        reduction=reduction,
    )
    roles = {"data": case.data, "indices": case.indices, "updates": case.updates}
    info = {
        role: helper.make_tensor_value_info(
            role,
            TensorProto.INT64 if array.dtype == np.int64 else TensorProto.FLOAT,
            list(array.shape),
        )
        for role, array in roles.items()
    }
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, list(case.data.shape))
    graph = helper.make_graph([node], "scatter_elements", list(info.values()), [out])
    # IR version 9 is read by every onnxruntime that has opset 18.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    return bytes(model.SerializeToString())


def _onnxruntime(case: BenchCase, reduction: str) -> Call:
    """A one-node ScatterElements (opset 18) model on onnxruntime's CPU provider."""
    _on_numpy(case, "onnxruntime")
    require("onnxruntime")
    require("onnx")
    import onnxruntime

    model = _onnx_model(case, reduction)
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    feeds = {"data": case.data, "indices": case.indices, "updates": case.updates}
    return lambda: session.run(None, feeds)[0]


def _torch(case: BenchCase, reduction: str) -> Call:
    """``torch.scatter`` / ``torch.scatter_reduce(include_self=True)`` where the arrays are."""
    require("torch")
    import torch
    from torch.utils.dlpack import from_dlpack

    data, indices, updates = (from_dlpack(a) for a in case.arrays)
    if reduction == "none":
        scatter: Call = partial(torch.scatter, data, case.axis, indices, updates)
    else:
        how = _TORCH_REDUCE[reduction]
        # include_self=True is ONNX's reduction: the value already in data takes part.
        scatter = partial(
            torch.scatter_reduce, data, case.axis, indices, updates, how, include_self=True
        )
    return _then(scatter, torch.cuda.synchronize) if data.is_cuda else scatter


def _flat_positions(case: BenchCase, xp: Any) -> Any:
    """Where each update lands in the flattened data: ``ufunc.at`` and cupyx take those."""
    flat: Any = 0
    ndim = case.indices.ndim
    for dim, (extent, length) in enumerate(zip(case.data.shape, case.indices.shape, strict=True)):
        if dim == case.axis:
            position = case.indices
        else:
            position = xp.arange(length, dtype=xp.int64).reshape(
                [length if d == dim else 1 for d in range(ndim)]
            )
        flat = flat * extent + position
    return flat.reshape(-1)


def _numpy_peer(case: BenchCase, reduction: str) -> Call:
    """``put_along_axis`` for none; ``ufunc.at`` on flat positions made beforehand otherwise."""
    _on_numpy(case, "numpy-peer")
    data, indices, updates, axis = *case.arrays, case.axis
    if reduction == "none":

        def put() -> Any:
            out = data.copy()
            np.put_along_axis(out, indices, updates, axis)
            return out

        return put
    # Made here, outside the timing: the peer is measured at its best.
    flat, values, ufunc = _flat_positions(case, np), updates.reshape(-1), _UFUNC[reduction]

    def at() -> Any:
        out = data.copy()
        ufunc.at(out.reshape(-1), flat, values)
        return out

    return at


def _cupyx(case: BenchCase, reduction: str) -> Call:
    """``cupyx.scatter_add/max/min`` on flat positions made beforehand, on the GPU."""
    require("cupy")
    import cupy
    import cupyx

    if not isinstance(case.data, cupy.ndarray):
        msg = "cupyx runs on cupy arrays: move the case with case.to(cupy.asarray)"
        raise Unavailable(msg)
    scatter = {"add": cupyx.scatter_add, "max": cupyx.scatter_max, "min": cupyx.scatter_min}
    if reduction not in scatter:
        msg = f"cupyx has no scatter for {reduction!r}"
        raise Unavailable(msg)
    flat, values, data = _flat_positions(case, cupy), case.updates.reshape(-1), case.data

    def run() -> Any:
        out = data.copy().reshape(-1)
        scatter[reduction](out, flat, values)
        return out

    return synchronised(run, data)


def _copy_floor(case: BenchCase, reduction: str) -> Call:
    """Copying the bytes of the three inputs once: no scatter can move less."""
    sources = case.arrays
    targets = tuple(a.copy() for a in sources)

    def run() -> Any:
        for target, source in zip(targets, sources, strict=True):
            target[...] = source
        return targets[0]

    return synchronised(run, case.data)


_PEERS: dict[str, Callable[[BenchCase, str], Call]] = {
    "onnxruntime": _onnxruntime,
    "torch": _torch,
    "numpy-peer": _numpy_peer,
    "cupyx": _cupyx,
    FLOOR: _copy_floor,
}
