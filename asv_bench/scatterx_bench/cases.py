"""The standard cases of performance.md and every contestant timed on them, for all harnesses.

The command (``python asv_bench/bench.py``), the asv suites of ``asv_bench/benchmarks`` and
``tools/gpu_bench.py`` build their cases and contestants here only (:func:`make_call`; the
peers themselves are in :mod:`.peers`, what every contestant is built from in :mod:`.base`):
one case name means the same data everywhere. Every contestant runs in each of
:data:`.base.MODES`: returning a new array, or updating data in place. A contestant that
cannot run here raises :class:`.base.Unavailable`, a NotImplementedError (asv reports it as
a skip), whose message says why and what to install.
"""

from __future__ import annotations

import statistics
import time
import zlib
from collections.abc import Callable
from dataclasses import replace
from importlib.metadata import entry_points
from typing import Any, NamedTuple

import numpy as np

import scatterx
from scatterx import BackendError, backends

from .base import GATHERS, MODES, BenchCase, Call, Mode, Unavailable, synchronised
from .nd import ND_CASES, make_nd_case, result_shape
from .peers import ONNXRUNTIME_ONE_THREAD, PEERS

REDUCTIONS = ("none", "add", "mul", "max", "min")
#: The standard table's row of GatherElements on a case's data and indices, in the place of
#: a reduction (:func:`gather_case`): ``--reduction gather``.
GATHER = "gather"
ROW_KINDS = (*REDUCTIONS, GATHER)
BACKENDS = ("numpy", "numba", "cupy")
CPU_PEERS = ("onnxruntime", "torch", "numpy-peer")
#: The contestants of the ScatterND and GatherND cases (:mod:`.nd`): the backends that
#: compute them, onnxruntime on its default threads and on one, torch's row calls.
ND_BACKENDS = ("numba", "numpy")
ND_PEERS = ("onnxruntime", ONNXRUNTIME_ONE_THREAD, "torch")

# In place, mul meets its own products call after call: updates within 1/2048 of 1 keep
# data far from float32's subnormals and infinity for millions of calls (asv's included).
_NEAR_ONE = 1 / 1024

#: What the in-place cells of a table mean, for the contestants that cannot write there.
IN_PLACE_NOTES = (
    "in place: every contestant updates a data array of its own, call after call "
    "(scatterx's out=data, Tensor.scatter_, scatter_add_ and scatter_reduce_, put_along_axis and "
    "ufunc.at on data itself); mul takes the case's updates brought within 1/2048 of 1, "
    "so that the products stay normal numbers",
    "onnxruntime cannot write into its input: its in-place cell is its usual call, whose "
    "output reuses the buffers of its arena between runs (the fair comparison)",
    "copy-floor in place copies indices and updates only: an in-place scatter must read "
    "them, and need not copy data",
    "gather: GatherElements of the case's data and indices (torch.gather, "
    "take_along_axis, a GatherElements node); in place, into a result array of the "
    "contestant's own (out=; take_along_axis has none); copy-floor copies the indices",
)


class Shapes(NamedTuple):
    """A standard case at full size (performance.md's table)."""

    data: tuple[int, ...]
    indices: tuple[int, ...]
    axis: int
    one_id_per_row: bool = False
    #: The arrays are those of the case in C order, transposed: Fortran order, the axis
    #: counted from the other end.
    transposed: bool = False
    dtype: str = "float32"
    index_dtype: str = "int64"


CASES = {
    "square-random": Shapes((4096, 4096), (4096, 4096), 0),
    "1d-histogram": Shapes((65536,), (4194304,), 0),
    "embedding-grad": Shapes((30000, 256), (16384, 256), 0, one_id_per_row=True),
    "last-axis-sparse": Shapes((8192, 1024), (8192, 64), 1),
}
CASE_NAMES = tuple(CASES)
#: Cases of layouts other than C order, timed by ``python asv_bench/bench.py`` beside the
#: standard ones (asv times the standard cases only).
LAYOUT_CASES = {
    "square-transposed": Shapes((4096, 4096), (4096, 4096), 0, transposed=True),
    # Issue 27's 3-D layout: a middle axis, float64 data, int32 indices.
    "mid-axis-3d": Shapes((64, 1024, 128), (64, 256, 128), 1, dtype="float64", index_dtype="int32"),
}
ALL_CASE_NAMES = (*CASE_NAMES, *LAYOUT_CASES)
# asv's sizes, as the scale of make_case. "small" keeps each case's character at 1/32 of
# the bytes with at least 16384 updates: enough that automatic choice hands the call to the
# numba backend (scatterx_numba.SMALL_CALL_UPDATES).
SIZES = {"small": 1 / 32, "full": 1.0}


def make_case(name: str, scale: float = 1.0) -> BenchCase:
    """Build the standard case ``name``, its leading dimensions scaled by ``scale``.

    The seed comes from the name alone: a case is the same whichever others are built, in
    every harness. Values lie in [0.5, 1.5]: long products under ``mul`` then neither
    overflow nor reach float32's subnormals, whose slow arithmetic would measure the CPU.
    The ScatterND and GatherND cases (:data:`.nd.ND_CASES`) are built by :mod:`.nd`.
    """
    if name in ND_CASES:
        return make_nd_case(name, scale)
    spec = CASES.get(name) or LAYOUT_CASES.get(name)
    if spec is None:
        names = ", ".join((*ALL_CASE_NAMES, *ND_CASES))
        msg = f"unknown case {name!r}; the cases are {names}"
        raise ValueError(msg)
    data_shape, index_shape = _scaled(spec.data, scale), _scaled(spec.indices, scale)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    dtype, index_dtype = np.dtype(spec.dtype), np.dtype(spec.index_dtype)
    data = rng.random(data_shape, dtype=dtype) + dtype.type(0.5)
    updates = rng.random(index_shape, dtype=dtype) + dtype.type(0.5)
    extent = data_shape[spec.axis]
    if spec.one_id_per_row:
        # Embedding backward: each row of indices is one token id repeated along the row.
        ids = rng.integers(0, extent, size=(index_shape[0], 1), dtype=index_dtype)
        indices = np.ascontiguousarray(np.broadcast_to(ids, index_shape))
    else:
        indices = rng.integers(0, extent, size=index_shape, dtype=index_dtype)
    if spec.transposed:
        return BenchCase(name, data.T, indices.T, updates.T, data.ndim - 1 - spec.axis)
    return BenchCase(name, data, indices, updates, spec.axis)


def _scaled(shape: tuple[int, ...], scale: float) -> tuple[int, ...]:
    return (max(1, round(shape[0] * scale)), *shape[1:])


def gather_case(case: BenchCase) -> BenchCase:
    """GatherElements of ``case``'s data and indices along its axis (no updates)."""
    return replace(case, op="gather_elements", updates=None)


def spec_example() -> BenchCase:
    """The operator text's 3x3 example: nearly no work, so the front-end's fixed cost."""
    data = np.zeros((3, 3), dtype=np.float32)
    indices = np.array([[1, 0, 2], [0, 2, 1]], dtype=np.int64)
    updates = np.array([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], dtype=np.float32)
    return BenchCase("spec-example", data, indices, updates, 0)


def require_backend(name: str) -> None:
    """Raise :class:`Unavailable` when scatterx has no usable backend ``name`` here."""
    records = {record.name: record for record in backends()}
    if name not in records:
        msg = f"scatterx registers no {name!r} backend here"
        raise Unavailable(msg)
    if not records[name].available:
        msg = f"backend {name}: {records[name].reason}"
        raise Unavailable(msg)


def make_call(contestant: str, case: BenchCase, reduction: str, mode: Mode = "new") -> Call:
    """A callable computing ``case`` with ``reduction`` on ``contestant``, warmed up once.

    ``contestant`` is a peer, :data:`FLOOR` or the name of a scatterx backend. Peers run
    where the case's arrays are (:meth:`BenchCase.to`); a backend receives them through its
    ``from_numpy``. A call on a GPU returns once the device has finished. The warm-up keeps
    compilation (numba, NVRTC), session creation and first-touch page faults out of the
    first timed sample, which a quick run's only sample would be; each mode has its own
    call, so its own warm-up (an in-place call may take other code). :func:`build_call`
    says what ``mode`` does.
    """
    return first_call(contestant, case, reduction, mode)[0]


def first_call(
    contestant: str, case: BenchCase, reduction: str, mode: Mode = "new"
) -> tuple[Call, Any]:
    """:func:`make_call`'s call and the result of its warm-up, the first run on its data
    (the one to check: in place, later runs start from what it left)."""
    call = build_call(contestant, case, reduction, mode)
    try:
        return call, call()
    except BackendError as exc:  # the backend declines this dtype, reduction or array type
        raise Unavailable(str(exc)) from exc
    except TypeError as exc:
        if mode == "new":
            raise
        # Contract section 7: out= on immutable or lazy arrays (JAX, Dask) is a TypeError.
        msg = f"in place: {exc}"
        raise Unavailable(msg) from exc


def build_call(contestant: str, case: BenchCase, reduction: str, mode: Mode = "new") -> Call:
    """The call of :func:`make_call`, not warmed up: its first run is the first on its data.

    With ``mode="new"`` each run returns a new array and leaves ``case`` as it was. With
    ``"in-place"`` the call owns a copy of ``case.data`` (its updates brought near 1 for
    ``mul``: :func:`in_place_case`), which each run updates and returns; ``case`` itself
    stays as it was. onnxruntime cannot write into its input and runs as in ``"new"``
    (:data:`IN_PLACE_NOTES`). A gather in place writes into a result array of its own
    (``out=``), made here. ``reduction`` :data:`GATHER` times GatherElements of the case's
    data and indices (:func:`gather_case`).
    """
    if mode not in MODES:
        msg = f"unknown mode {mode!r}; the modes are {', '.join(MODES)}"
        raise ValueError(msg)
    if reduction == GATHER:
        case = gather_case(case)
    if mode == "in-place":
        case = in_place_case(case, reduction)
    make = PEERS.get(contestant)
    if make is not None:
        return make(case, reduction, mode)
    return _backend(contestant, case, reduction, mode)


def in_place_case(case: BenchCase, reduction: str) -> BenchCase:
    """``case`` with a copy of its data to update in place, and for ``mul`` updates near 1.

    Works where the arrays are (NumPy, CuPy, torch): the copy is ``copy()`` or ``clone()``.
    A gather comes back as it was: it never writes data.
    """
    if case.op in GATHERS:  # a gather leaves data as it is: no copy of its own needed
        return case
    data = case.data
    # Its layout kept (a transposed case stays transposed): clone() keeps strides.
    owned = data.clone() if hasattr(data, "clone") else data.copy(order="K")
    updates = case.updates
    if reduction == "mul" and updates is not None:
        updates = (updates - 1) * _NEAR_ONE + 1
    return replace(case, data=owned, updates=updates)


def median_ms(call: Call, repeat: int, *, warm: bool = True) -> float:
    """Median milliseconds of ``repeat`` calls in a row, after one untimed call (unless
    ``warm`` is False: a call that compiles nothing and takes seconds, say).

    The untimed call lets the thread pools of the contestant timed before settle down.
    """
    if warm:
        call()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def backend_from_numpy(name: str) -> Callable[[Any], Any] | None:
    """The ``from_numpy`` of backend ``name`` (the seam of :mod:`scatterx.backend`: where its
    arrays live), its object loaded from the entry point ``scatterx.backends`` names it by, as
    a tool outside scatterx finds a backend; None where it has no entry point or method."""
    for point in entry_points(group="scatterx.backends", name=name):
        from_numpy: Callable[[Any], Any] | None = getattr(point.load(), "from_numpy", None)
        return from_numpy
    return None


def _backend(name: str, case: BenchCase, reduction: str, mode: Mode) -> Call:
    """The scatterx backend ``name``, named with ``backend=``, computing the case's ``op``.

    A call naming numba waits for its compile (the warm-up's), where automatic choice
    could run numpy meanwhile: the timed calls are numba's compiled code.
    """
    require_backend(name)
    from_numpy = backend_from_numpy(name)
    on_numpy = isinstance(case.data, np.ndarray)
    if from_numpy is not None and on_numpy:
        case = case.to(from_numpy)  # a copy where the backend's arrays live elsewhere
    data, indices, updates = case.arrays
    kwargs: dict[str, Any] = {"backend": name}
    if mode == "in-place":
        kwargs["out"] = data
    if case.op in GATHERS:
        if mode == "in-place":
            out = np.empty(result_shape(case), dtype=case.data.dtype)
            kwargs["out"] = from_numpy(out) if from_numpy is not None and on_numpy else out
        if case.op == "gather_nd":
            return synchronised(lambda: scatterx.gather_nd(data, indices, **kwargs), data)
        kwargs["axis"] = case.axis
        return synchronised(lambda: scatterx.gather_elements(data, indices, **kwargs), data)
    kwargs["reduction"] = reduction
    if case.op == "scatter_nd":
        return synchronised(lambda: scatterx.scatter_nd(data, indices, updates, **kwargs), data)
    kwargs["axis"] = case.axis
    return synchronised(lambda: scatterx.scatter_elements(data, indices, updates, **kwargs), data)
