"""The numba backend: parallel, deterministic CPU kernels for NumPy arrays.

Importing this module does not import numba; the kernels are compiled (or loaded from
numba's on-disk cache) on first use, one signature at a time. In automatic choice a call
whose code is not loaded yet runs on numpy while a background thread loads it
(:func:`set_compile_mode` and ``SCATTERX_NUMBA_COMPILE=wait`` make it wait instead).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

import numpy as np

from scatterx.backend import (
    DTYPE_REDUCTIONS,
    Backend,
    GatherNDRequest,
    GatherRequest,
    NumpyArrays,
    Request,
    ScatterNDRequest,
    ScatterRequest,
    unserved,
)

from . import _runtime
from ._background import compile_mode, set_compile_mode

__all__ = ["SMALL_CALL_UPDATES", "backend", "compile_mode", "set_compile_mode"]

#: Calls with fewer updates than this go to numpy in automatic choice: a parallel launch
#: has a fixed cost that small calls do not repay (the crossover measurement is in
#: docs/backends/numba.md).
SMALL_CALL_UPDATES = 8192

_NUMERIC = (
    "bool",
    *(f"{sign}int{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64)),
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)


class NumbaBackend(NumpyArrays):
    """Parallel CPU kernels compiled with numba; every numeric dtype and reduction, gather,
    and ScatterND and GatherND on those kernels (:mod:`scatterx_numba._nd`)."""

    name = "numba"
    priority = 10
    capabilities: Mapping[str, frozenset[str]] = {k: DTYPE_REDUCTIONS[k] for k in _NUMERIC}

    def __init__(self) -> None:
        self._unavailable: tuple[str | None] | None = None

    @property
    def version(self) -> str:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("numba")
        except PackageNotFoundError:
            return "not installed"

    def available(self) -> str | None:
        # No lock: whether numba is installed does not change, so two threads that both
        # ask first store the same answer.
        if self._unavailable is None:
            missing = importlib.util.find_spec("numba") is None
            why = "numba is not installed (pip install 'scatterx[numba]')" if missing else None
            self._unavailable = (why,)
        # Not cached: a fork can make a process unable to run numba's threads.
        return self._unavailable[0] or _runtime.fork_problem()

    def can_run(self, request: Request) -> str | None:
        return unserved(self.capabilities, request)

    def skip_automatic(self, request: Request) -> str | None:
        if isinstance(request, (ScatterRequest, GatherRequest)):
            n = request.n_indices
            what = "updates" if isinstance(request, ScatterRequest) else "indices"
        else:
            from . import _nd

            n, what = _nd.moved(request), "elements"
        if n < SMALL_CALL_UPDATES:
            return f"{n} {what}: below {SMALL_CALL_UPDATES} numpy is faster than a parallel launch"
        if not isinstance(request, (ScatterRequest, GatherRequest)):
            # Asked about as the call it runs as (its metadata: nothing is computed).
            request = _nd.elements_request(request)
        from ._background import compiling

        return compiling(request)

    def scatter_elements(self, request: ScatterRequest) -> np.ndarray[Any, Any]:
        from ._run import scatter_elements

        return scatter_elements(request)

    def gather_elements(self, request: GatherRequest) -> np.ndarray[Any, Any]:
        from ._gather import gather_elements

        return gather_elements(request)

    def scatter_nd(self, request: ScatterNDRequest) -> np.ndarray[Any, Any]:
        from ._nd import scatter_nd

        return scatter_nd(request)

    def gather_nd(self, request: GatherNDRequest) -> np.ndarray[Any, Any]:
        from ._nd import gather_nd

        return gather_nd(request)


backend: Backend = NumbaBackend()
