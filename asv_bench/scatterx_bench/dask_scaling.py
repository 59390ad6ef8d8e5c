"""The scaling case of ``python asv_bench/bench.py --library dask``: more data than one
worker's memory, on a ``distributed.LocalCluster``.

:func:`run_scaling` generates a data array larger than a worker's memory limit on the
workers (from seeds, block by block), scatters into it along its last axis, and brings back
one checksum per block: nothing large travels to the client. It reports the wall time, the
peak process memory of the workers and whether any worker restarted.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from scatterx import scatter_elements

CHUNK_SIZE = "64MiB"


def _module(name: str) -> Any:
    """A module of dask or distributed, untyped (their annotations are partial)."""
    return importlib.import_module(name)


# -- the scaling case: more data than one worker's memory, on a LocalCluster ------------------


@dataclass(frozen=True)
class ScalingConfig:
    """The scaling case: float32 data of ``gib`` GiB and ``columns`` columns, chunked by rows
    (dask's ``"auto"`` under ``chunk_size``); ``per_row`` updates in each row, scattered
    along axis 1 with ``reduction``; workers of one thread under ``memory_limit``."""

    gib: float = 2.0
    memory_limit: str = "512MiB"
    workers: tuple[int, ...] = (1, 2)
    chunk_size: str = CHUNK_SIZE
    columns: int = 16384
    per_row: int = 256
    reduction: str = "add"
    seed: int = 20240
    timeout_s: float = 600.0
    processes: bool = True

    @property
    def rows(self) -> int:
        return max(1, round(self.gib * 2**30 / (4 * self.columns)))

    @property
    def row_chunks(self) -> tuple[int, ...]:
        """The data's chunks along its rows (its columns are one chunk)."""
        shape = (self.rows, self.columns)
        chunks = _module("dask.array.core").normalize_chunks(
            {0: "auto", 1: -1}, shape, limit=self.chunk_size, dtype=np.float32
        )
        return tuple(chunks[0])


def _generated(seed: int, role: int, high: int, block_info: Any = None) -> Any:
    """One block of the scaling case, from ``(seed, role, block row)``: data and updates
    in [0.5, 1.5) (role 0, 2), indices in [0, high) (role 1)."""
    info = block_info[None]
    shape, row = info["chunk-shape"], info["chunk-location"][0]
    rng = np.random.default_rng([seed, role, row])
    if role == 1:
        return rng.integers(0, high, size=shape, dtype=np.int64)
    block = rng.random(shape, dtype=np.float32)
    block += np.float32(0.5)  # in place: no second block in memory
    return block


def scaling_arrays(config: ScalingConfig) -> tuple[Any, Any, Any]:
    """The scaling case's data, indices and updates: lazy, each block generated where it is
    computed (on a worker), indices and updates chunked by the same rows as data."""
    da = _module("dask.array")
    rows = config.row_chunks
    data_chunks, index_chunks = (rows, (config.columns,)), (rows, (config.per_row,))
    seed, high = config.seed, config.columns
    data = da.map_blocks(_generated, seed, 0, high, chunks=data_chunks, dtype=np.float32)
    indices = da.map_blocks(_generated, seed, 1, high, chunks=index_chunks, dtype=np.int64)
    updates = da.map_blocks(_generated, seed, 2, high, chunks=index_chunks, dtype=np.float32)
    return data, indices, updates


def _block_sum(block: Any) -> Any:
    return np.full((1, 1), block.sum(dtype=np.float64))


def block_checksums(config: ScalingConfig) -> Any:
    """The lazy scatter of the scaling case, each block of the result reduced to its float64
    sum on the worker that computed it: a ``(blocks, 1)`` array."""
    data, indices, updates = scaling_arrays(config)
    result = scatter_elements(data, indices, updates, axis=1, reduction=config.reduction)
    blocks = ((1,) * result.numblocks[0], (1,))
    return result.map_blocks(_block_sum, chunks=blocks, dtype=np.float64)


def _peak_rss(reset: bool = False) -> int | None:
    """This process's peak resident memory in bytes (Linux's VmHWM), after resetting it to
    the current one when ``reset`` (and the kernel allows); None where Linux does not say."""
    try:
        if reset:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
                refs.write("5")
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _spilled(dask_worker: Any) -> float:
    """Bytes this worker has written to disk so far (its spill metrics, all activities)."""
    return float(
        sum(
            value
            for key, value in dask_worker.digests_total.items()
            if isinstance(key, tuple) and "disk-write" in key and key[-1] == "bytes"
        )
    )


def _warm(columns: int, per_row: int, reduction: str) -> bool:
    """In a worker's task: one small lazy scatter of the case's layout through the dask
    backend, so that numba is imported and its kernels loaded before the timing."""
    da = _module("dask.array")
    rng = np.random.default_rng(0)
    rows = 64  # 16384 updates: enough for the numba backend
    data = da.from_array(np.ones((rows, columns), np.float32))
    indices = da.from_array(rng.integers(0, columns, (rows, per_row), dtype=np.int64))
    updates = da.from_array(np.ones((rows, per_row), np.float32))
    out = scatter_elements(data, indices, updates, axis=1, reduction=reduction)
    return bool(np.isfinite(out.compute(scheduler="sync")).all())


@dataclass
class ScalingResult:
    """One cluster's run of the scaling case."""

    workers: int
    start_s: float  # cluster started and warmed
    wall_s: float  # the computation alone
    sampler_peak: float | None  # bytes, MemorySampler(measure="process"): all workers summed
    worker_peaks: list[int | None]  # bytes, each worker's own peak (VmHWM) during the run
    restarted: int  # workers whose process changed during the run
    spilled: float  # bytes the workers wrote to disk during the run
    checksums: list[float] | None  # one float64 sum per block of the result
    error: str | None = None

    @property
    def checksum(self) -> float | None:
        return None if self.checksums is None else math.fsum(self.checksums)


def _worker_pids(client: Any) -> set[int]:
    return set(client.run(os.getpid).values())


def run_scaling(config: ScalingConfig, workers: int) -> ScalingResult:
    """The scaling case on a new ``LocalCluster`` of ``workers`` one-thread workers."""
    distributed = _module("distributed")
    sampler = _module("distributed.diagnostics.memory_sampler").MemorySampler()
    started = time.perf_counter()
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=config.processes,
            memory_limit=config.memory_limit,
            dashboard_address=":0",  # its HTTP server starts anyway: on a free port
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.wait_for_workers(workers)
        shape = (config.columns, config.per_row, config.reduction)
        pinned = {"allow_other_workers": False, "pure": False}
        addresses = list(client.nthreads())  # every worker (scheduler_info lists 5)
        client.gather([client.submit(_warm, *shape, workers=[a], **pinned) for a in addresses])
        start_s = time.perf_counter() - started
        before = _worker_pids(client)
        client.run(_peak_rss, True)
        spilled = sum(client.run(_spilled).values())
        checks = block_checksums(config)
        sums, error = None, None
        began = time.perf_counter()
        with sampler.sample("scaling", client=client, measure="process", interval=0.1):
            future = client.compute(checks)
            try:
                found = np.asarray(future.result(timeout=config.timeout_s))
                sums = [float(s) for s in found.ravel()]
            except Exception as exc:  # a worker killed too often, a timeout: reported
                error = f"{type(exc).__name__}: {exc}"
                future.cancel()
        wall_s = time.perf_counter() - began
        samples = [memory for _, memory in sampler.samples.get("scaling", [])]
        peaks = list(client.run(_peak_rss).values())
        restarted = len(before - _worker_pids(client))
        spilled = max(0.0, sum(client.run(_spilled).values()) - spilled)
    return ScalingResult(
        workers,
        start_s,
        wall_s,
        max(samples, default=None),
        peaks,
        restarted,
        spilled,
        sums,
        error,
    )
