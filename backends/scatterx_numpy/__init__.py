"""The NumPy reference backend: every dtype and reduction of the contract, for the four
operations, vectorised."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
)

from . import _kernel, _nd


class NumpyBackend(NumpyArrays):
    """Reference backend for ``numpy.ndarray``; see :mod:`scatterx_numpy._kernel`."""

    name = "numpy"
    priority = 100
    capabilities: Mapping[str, frozenset[str]] = DTYPE_REDUCTIONS

    @property
    def version(self) -> str:
        return np.__version__

    def available(self) -> str | None:
        return None

    def can_run(self, request: Request) -> str | None:
        return None

    # The kernels themselves, called without a method frame between (the small call's way).
    scatter_elements: Callable[[ScatterRequest], np.ndarray[Any, Any]] = staticmethod(
        _kernel.scatter_elements
    )
    gather_elements: Callable[[GatherRequest], np.ndarray[Any, Any]] = staticmethod(
        _kernel.gather_elements
    )
    scatter_nd: Callable[[ScatterNDRequest], np.ndarray[Any, Any]] = staticmethod(_nd.scatter_nd)
    gather_nd: Callable[[GatherNDRequest], np.ndarray[Any, Any]] = staticmethod(_nd.gather_nd)


backend: Backend = NumpyBackend()
