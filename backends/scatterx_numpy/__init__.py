"""The NumPy reference backend: every dtype and reduction of the contract, vectorised."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from scatterx.backend import DTYPE_REDUCTIONS, Backend, NumpyArrays, ScatterRequest

from ._kernel import scatter_elements


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

    def can_run(self, request: ScatterRequest) -> str | None:
        return None

    def scatter_elements(self, request: ScatterRequest) -> np.ndarray[Any, Any]:
        return scatter_elements(request)


backend: Backend = NumpyBackend()
