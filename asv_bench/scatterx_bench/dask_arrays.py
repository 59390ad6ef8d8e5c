"""The standard cases as Dask arrays, chunked as ``docs/backends/dask.md`` recommends.

The scatter axis whole, the other dimensions sized by dask (``"auto"`` under
``array.chunk-size``). Below both :mod:`.libraries` (``to_library(case, "dask")``) and
:mod:`.dask_bench` (the ``--library dask`` table), which import it.
"""

from __future__ import annotations

from typing import Any

from .base import BenchCase, require
from .dask_scaling import CHUNK_SIZE, _module


def axis_whole(ndim: int, axis: int) -> dict[int, int | str]:
    """The chunks of the recommended layout: ``axis`` whole (-1), dask sizes the others."""
    return {d: -1 if d == axis else "auto" for d in range(ndim)}


def to_dask(case: BenchCase, chunk_size: str = CHUNK_SIZE) -> BenchCase:
    """``case`` as Dask arrays, as docs/backends/dask.md recommends: data with its axis
    whole and its other dimensions chunked by dask's ``"auto"`` under ``array.chunk-size``
    = ``chunk_size``; indices and updates with data's chunks off the axis (cut to their
    length), their axis whole."""
    require("dask")
    dask, da = _module("dask"), _module("dask.array")
    with dask.config.set({"array.chunk-size": chunk_size}):
        data = da.from_array(case.data, chunks=axis_whole(case.data.ndim, case.axis))

    def like_data(array: Any) -> Any:
        if array is case.data:
            return data
        # Off the axis, the chunks of data's first positions, as many as the array has.
        first = tuple(
            slice(None) if d == case.axis else slice(0, n) for d, n in enumerate(array.shape)
        )
        chunks = tuple(-1 if d == case.axis else c for d, c in enumerate(data[first].chunks))
        return da.from_array(array, chunks=chunks)

    return case.to(like_data)
