"""The CuPy backend: deterministic CUDA kernels, bit for bit equal to the CPU backends.

Importing this module does not import cupy; the first call does. Kernels live in
``_kernels.cu`` and are compiled by NVRTC once per dtype. A call runs one of three
strategies, all giving the contract's bits:

``atomics``
    integer and bool add/mul/max/min, whose result no order can change;
``columns``
    one thread per ``outer x inner`` column, walking the axis in ascending order, when
    there are at least ``_run.COLUMNS_MIN`` columns or the axis is short;
``sort``
    otherwise: a stable sort of the flat targets, then one thread per run of equal
    targets applies the run's updates in their original order.

Fast paths, off by default and not yet verified on a GPU (``tools/gpu_check.sh`` does
that): ``SCATTERX_CUPY_FAST_PATHS=1`` or :func:`set_fast_paths` adds three strategies, whose
kernels live in ``_kernels_fast.cu`` (``_fast`` has the switch and the rule's bounds):

``warps``
    before ``columns``, when the axis is innermost in ``indices`` and there are many
    columns: one warp per column reads 32 steps at once, and lanes that meet at one
    target apply their updates in lane order;
``winner``
    before ``columns``, for ``none`` (any dtype) and float16/float32 max/min: each target's
    winning update is found by an integer ``atomicMax`` (largest position; or a key of
    value and position), then only the winner writes: two parallel passes, no sort;
``rows``
    instead of ``sort`` when there are many inner positions: if every index row is one
    target along the inner dims (an embedding's backward), a stable sort of the row keys
    alone, then one thread per (run of equal rows, inner position); else ``sort``.

With ``out=`` the kernels write into the caller's ``out`` when it is C-ordered (``out=data``
copies nothing), after one kernel has checked every index, so that a call that raises
leaves ``out`` untouched (``_run.destination``); another layout gets a new result, which
the front-end copies in.

``scatter_nd`` and ``gather_nd`` run as the ScatterElements and GatherElements they
translate to (``_nd``; the translation of :mod:`scatterx.backend`, shared with the numba
and dask backends), on these kernels; not yet run on a GPU.

``gather_elements`` runs a grid-stride kernel of ``_kernels_gather.cu`` (one per itemsize)
that reads data and indices with their own strides and moves each element's bits into a
new C-ordered result; bool data is read as its canonical 0/1.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from collections.abc import Mapping
from functools import cache, cached_property
from typing import Any

import numpy as np

from scatterx.backend import (
    Backend,
    GatherNDRequest,
    GatherRequest,
    Request,
    ScatterNDRequest,
    ScatterRequest,
    unserved,
)

from ._compile import SERVED
from ._fast import fast_paths_enabled, set_fast_paths

__all__ = ["CupyBackend", "backend", "fast_paths_enabled", "set_fast_paths"]

_DECLINED = {
    "bfloat16": "bfloat16 has no kernels in the cupy backend (cupy has no bfloat16 arrays)",
    "StringDType": "strings cannot live in cupy arrays",
    "object": "object arrays cannot live in cupy arrays",
    "str_": "strings cannot live in cupy arrays",
    "bytes_": "strings cannot live in cupy arrays",
}


@cache
def _cupy_version() -> str:
    if "cupy" in sys.modules:
        # Imported, or being imported by another thread: the import statement waits for
        # the whole module, where sys.modules may hold it half-built.
        import cupy

        return str(cupy.__version__)
    for name in importlib.metadata.packages_distributions().get("cupy", []):
        return importlib.metadata.version(name)
    return "not installed"


class CupyBackend:
    """Backend for ``cupy.ndarray`` on NVIDIA GPUs; see the module docstring."""

    name = "cupy"
    array_types: tuple[str, ...] = ("cupy:ndarray",)
    priority = 10
    capabilities: Mapping[str, frozenset[str]] = SERVED

    @property
    def version(self) -> str:
        """cupy's version, read from its distribution so that asking imports nothing."""
        return _cupy_version()

    def available(self) -> str | None:
        """None when cupy imports and sees a CUDA device, else why not. Cached."""
        return self._availability

    # Two threads that ask first at once may both compute it: the same answer, no side effect.
    @cached_property
    def _availability(self) -> str | None:
        if importlib.util.find_spec("cupy") is None:
            return "cupy is not installed (pip install 'scatterx[cupy]')"
        try:
            import cupy

            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # no driver, no libcuda, a broken install: all say why
            return f"cupy cannot reach a CUDA device: {exc}"
        if count < 1:
            return "cupy sees no CUDA device"
        return None

    def can_run(self, request: Request) -> str | None:
        """None when the kernels serve the dtype (and a scatter's reduction), else why not."""
        return unserved(SERVED, request, _DECLINED)

    def scatter_elements(self, request: ScatterRequest) -> Any:
        """The result on the device of ``data``, computed on the current stream: ``out`` when
        it is C-ordered, else a new C-ordered cupy array."""
        from ._run import scatter_elements

        return scatter_elements(request)

    def gather_elements(self, request: GatherRequest) -> Any:
        """A C-ordered cupy array on the device of ``data`` (``out`` when it is C-ordered, else a
        new one), gathered on the current stream."""
        from ._gather import gather_elements

        return gather_elements(request)

    def scatter_nd(self, request: ScatterNDRequest) -> Any:
        """As :meth:`scatter_elements`, for ``scatter_nd``: the ScatterElements along the rows
        of data viewed as a matrix (:mod:`scatterx_cupy._nd`). Not yet run on a GPU."""
        from ._nd import scatter_nd

        return scatter_nd(request)

    def gather_nd(self, request: GatherNDRequest) -> Any:
        """As :meth:`gather_elements`, for ``gather_nd`` (:mod:`scatterx_cupy._nd`). Not yet
        run on a GPU."""
        from ._nd import gather_nd

        return gather_nd(request)

    def from_numpy(self, array: np.ndarray[Any, Any]) -> Any:
        """Copy test data to the current device; TypeError for what cupy cannot hold."""
        dtype = np.dtype(array.dtype)
        if dtype.byteorder not in "=|":
            msg = f"cupy arrays hold native byte order only; got dtype {dtype.str!r}"
            raise TypeError(msg)
        if dtype.kind not in "biufc":
            msg = f"cupy arrays cannot hold dtype {dtype}"
            raise TypeError(msg)
        import cupy

        return cupy.asarray(array)

    def to_numpy(self, array: Any) -> np.ndarray[Any, Any]:
        """Copy a cupy array to the host (explicitly: scatterx itself never does)."""
        return np.asarray(array.get())


backend: Backend = CupyBackend()
