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
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from collections.abc import Mapping
from functools import cache, cached_property
from typing import Any

import numpy as np

from scatterx import ScatterRequest

from ._compile import SERVED

_DECLINED = {
    "bfloat16": "bfloat16 has no kernels in the cupy backend (cupy has no bfloat16 arrays)",
    "StringDType": "strings cannot live in cupy arrays",
    "object": "object arrays cannot live in cupy arrays",
    "str_": "strings cannot live in cupy arrays",
    "bytes_": "strings cannot live in cupy arrays",
}


@cache
def _cupy_version() -> str:
    module = sys.modules.get("cupy")
    if module is not None:
        return str(module.__version__)
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

    def can_run(self, request: ScatterRequest) -> str | None:
        """None when the kernels serve the dtype and reduction, else why not."""
        served = SERVED.get(request.dtype_key)
        if served is None:
            return _DECLINED.get(request.dtype_key, f"dtype {request.dtype_key} is not served")
        if request.reduction not in served:
            return f"reduction {request.reduction!r} is not defined for {request.dtype_key}"
        return None

    def scatter_elements(self, request: ScatterRequest) -> Any:
        """A new cupy array on the device of ``data``, computed on the current stream."""
        from ._run import scatter_elements

        return scatter_elements(request)

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


backend = CupyBackend()
