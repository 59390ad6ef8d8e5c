"""scatterx on Dask arrays, lazily, beside the in-memory numba call on the same NumPy arrays.

The suite of ``python asv_bench/bench.py --library dask`` (performance.md: on the threaded
scheduler with chunks near 64 MiB, within 1.5x of the in-memory numba call). The arrays are
chunked as ``docs/backends/dask.md`` recommends: the scatter axis whole, the other
dimensions sized by dask. ``time_persist`` builds the graph and computes its blocks, kept as
a Dask array. Skipped where dask is not installed. The scaling case (more data than one
worker's memory, on a ``distributed.LocalCluster``) starts processes and takes seconds:
it is in the command only.
"""

from __future__ import annotations

import contextlib
from typing import Any

from scatterx_bench.cases import CASE_NAMES, SIZES, make_case
from scatterx_bench.dask_arrays import to_dask
from scatterx_bench.dask_bench import persist_call
from scatterx_bench.dask_scaling import CHUNK_SIZE
from scatterx_bench.libraries import require_library, scatterx_call

# The cost of going lazy (the graph, the scheduler, the blocks) hangs little on the
# reduction: one keeps the smoke run short (each benchmark's setup takes about 1.5 s on the
# 2-core machine); `python asv_bench/bench.py --library dask` times none, add and max.
REDUCTIONS = ["add"]

# asv imports the suites once and forks a process per benchmark: importing dask here, where
# installed, spares each of them the import (0.7 s on the 2-core machine).
with contextlib.suppress(ImportError):
    import dask.array
    import dask.threaded  # noqa: F401


class DaskCall:
    """The lazy call persisted on the threaded scheduler, and numba on the NumPy arrays."""

    params = (REDUCTIONS, list(CASE_NAMES), list(SIZES))
    param_names = ("reduction", "case", "size")
    timeout = 300

    def setup(self, reduction: str, case: str, size: str) -> None:
        require_library("dask")
        on_numpy = make_case(case, SIZES[size])
        self.on_numpy = scatterx_call("numba", on_numpy, reduction)
        self.persist = persist_call(to_dask(on_numpy, CHUNK_SIZE), reduction)
        self.persist()  # the first persist of a process imports dask's schedulers

    def time_persist(self, *params: str) -> Any:
        return self.persist()

    def time_numba(self, *params: str) -> Any:
        return self.on_numpy()
