"""The dask backend: ScatterElements, GatherElements, ScatterND and GatherND on Dask arrays,
lazily, exactly.

A call returns a Dask array at once; its tasks run scatterx's in-memory backends (numba
where installed) on blocks: see :mod:`scatterx_dask._graph` for the graph and its cost,
:mod:`scatterx_dask._cores` for how numba and Dask share the cores, and
``docs/backends/dask.md``. Importing this module does not import dask.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import math
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

import numpy as np

from scatterx.backend import (
    DTYPE_REDUCTIONS,
    Backend,
    GatherNDRequest,
    GatherRequest,
    Request,
    ScatterNDRequest,
    ScatterRequest,
)

Array = np.ndarray[Any, Any]
Chunker = Callable[[Array], Any]


def few_chunks(array: Array) -> tuple[int, ...]:
    """Test data's default chunks: about three per dimension (so along any axis too)."""
    return tuple(max(1, math.ceil(size / 3)) for size in array.shape)


_chunker: ContextVar[Chunker] = ContextVar("scatterx_dask_chunker", default=few_chunks)


@contextlib.contextmanager
def test_chunks(chunker: Chunker) -> Iterator[None]:
    """Make :meth:`DaskBackend.from_numpy` chunk test data with ``chunker(array)``.

    Parameters
    ----------
    chunker : callable
        Takes a NumPy array, returns the ``chunks`` of ``dask.array.from_array``.

    Yields
    ------
    None
        Inside the block, test data is chunked so.
    """
    token = _chunker.set(chunker)
    try:
        yield
    finally:
        _chunker.reset(token)


test_chunks.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


class DaskBackend:
    """Dask arrays: lazy, exact, in parallel by blocks of columns; every dtype."""

    name = "dask"
    array_types: tuple[str, ...] = ("dask.array:Array",)
    priority = 50
    capabilities: Mapping[str, frozenset[str]] = DTYPE_REDUCTIONS

    def __init__(self) -> None:
        self._unavailable: tuple[str | None] | None = None

    @property
    def version(self) -> str:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("dask")
        except PackageNotFoundError:
            return "not installed"

    def available(self) -> str | None:
        # No lock: whether dask is installed does not change, so two threads that both
        # ask first store the same answer.
        if self._unavailable is None:
            missing = importlib.util.find_spec("dask") is None
            why = "dask is not installed (pip install 'scatterx[dask]')" if missing else None
            self._unavailable = (why,)
        return self._unavailable[0]

    def can_run(self, request: Request) -> str | None:
        return None

    def scatter_elements(self, request: ScatterRequest) -> Any:
        from ._run import scatter_elements

        return scatter_elements(request)

    def gather_elements(self, request: GatherRequest) -> Any:
        from ._run import gather_elements

        return gather_elements(request)

    def scatter_nd(self, request: ScatterNDRequest) -> Any:
        from ._nd import scatter_nd

        return scatter_nd(request)

    def gather_nd(self, request: GatherNDRequest) -> Any:
        from ._nd import gather_nd

        return gather_nd(request)

    def from_numpy(self, array: Array) -> Any:
        """Test data as a Dask array, chunked as :func:`test_chunks` says."""
        da: Any = importlib.import_module("dask.array")
        return da.from_array(array, chunks=_chunker.get()(array), asarray=False)

    def to_numpy(self, array: Any) -> Array:
        """The values of a Dask array, computed."""
        return np.asarray(array.compute())


backend: Backend = DaskBackend()
