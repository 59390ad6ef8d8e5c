"""The NumPy reference backend: every dtype and reduction of the contract, and gather,
vectorised."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from scatterx.backend import (
    DTYPE_REDUCTIONS,
    Backend,
    GatherRequest,
    NumpyArrays,
    Request,
    ScatterRequest,
)

from ._kernel import gather_elements, scatter_elements


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

    def scatter_elements(self, request: ScatterRequest) -> np.ndarray[Any, Any]:
        return scatter_elements(request)

    def gather_elements(self, request: GatherRequest) -> np.ndarray[Any, Any]:
        return gather_elements(request)


backend: Backend = NumpyBackend()
