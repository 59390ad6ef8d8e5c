"""The routed scatter on a ``LocalCluster`` against Dask's own data movement (issue 46).

performance.md: on a 2-worker ``LocalCluster`` the anchor is the data movement itself, at
most 1.5x the time that Dask's own P2P rechunk or ``dask.array.shuffle`` needs to move the
same bytes. For an along-axis case of :mod:`.dask_along` (data chunked along the axis,
updates in blocks of their own: every update is routed to its block of data), on one
cluster, with every array persisted first, in turns:

- *scatter*: the sum of the lazy ``scatter_elements(..., reduction="add")``;
- *rechunk p2p*: a float32 array of the bytes of indices and updates (12 bytes an update),
  ``R`` blocks of rows (one per block of updates), rechunked to ``M`` blocks of columns
  (one per block of data) with ``method="p2p"``, then summed: each block of the result
  takes a share of every block of the input, as the route gives each block of data a share
  of every block of updates;
- *rechunk tasks*: the same with ``method="tasks"``;
- *shuffle* (``--shuffle``): those bytes as rows of 300 float32 (1,200 bytes, a hundred
  updates' worth) in ``R`` blocks, ``dask.array.shuffle`` into ``M`` random groups of rows,
  then summed. Its graph holds the groups, an int per row, in every task (115 MiB for
  10^8 updates, and minutes to compute): it is left out by default.

Each is computed ``--repeat`` times; the best of each and their ratios are printed. Run
``python -m scatterx_bench.dask_p2p N,M,U,R --workers 2`` from ``asv_bench/``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import Any

import numpy as np

from .dask_along import AlongConfig, _block, _call, _chunks, _warm, along_arrays
from .dask_scaling import _module

#: float32 values per update that hold its index (int64) and its value (float32)
WORDS = 3
#: float32 values per row of the shuffle's array
ROW = 300


def moved_arrays(config: AlongConfig) -> tuple[Any, Any]:
    """The arrays that the anchors move: the bytes of indices and updates, made block by
    block from seeds; for the rechunks, ``R`` blocks of one row; for the shuffle, rows of
    :data:`ROW` values in ``R`` blocks."""
    da = _module("dask.array")
    rows, width = config.update_chunks, WORDS * config.updates // config.update_chunks
    make = da.map_blocks
    wide = make(_block, config.seed, 4, 0, chunks=((1,) * rows, (width,)), dtype=np.float32)
    tall_rows = WORDS * config.updates // ROW
    chunks = (_chunks(tall_rows, rows), (ROW,))
    tall = make(_block, config.seed, 5, 0, chunks=chunks, dtype=np.float32)
    return wide, tall


def anchors(config: AlongConfig, wide: Any, tall: Any | None) -> dict[str, Any]:
    """The anchors' lazy sums: P2P and task rechunks of ``wide``, the shuffle of ``tall``
    (unless None)."""
    da = _module("dask.array")
    columns = ((wide.shape[0],), _chunks(wide.shape[1], config.data_chunks))
    sums = {
        "rechunk p2p": wide.rechunk(columns, method="p2p").sum(dtype=np.float64),
        "rechunk tasks": wide.rechunk(columns, method="tasks").sum(dtype=np.float64),
    }
    if tall is not None:
        rng = np.random.default_rng(config.seed)
        groups = np.array_split(rng.permutation(tall.shape[0]), config.data_chunks)
        indexer = [sorted(int(i) for i in g) for g in groups]
        sums["shuffle"] = da.shuffle(tall, indexer, axis=0).sum(dtype=np.float64)
    return sums


def run(
    config: AlongConfig, workers: int, memory_limit: str, repeat: int, shuffle: bool = False
) -> dict[str, float]:
    """The best wall seconds of the scatter and of each anchor (the shuffle too where
    ``shuffle``) on one new cluster, in turns, every array persisted first."""
    distributed = _module("distributed")
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            memory_limit=memory_limit,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.wait_for_workers(workers)
        client.run(_warm)
        data, indices, updates = client.persist(along_arrays(config))
        wide, tall = moved_arrays(config)
        wide, tall = client.persist([wide, tall if shuffle else wide[:0]])
        distributed.wait([data, indices, updates, wide, tall])
        scatter = _call(config, data, indices, updates).astype(np.float64).sum()
        sums = {"scatter": scatter, **anchors(config, wide, tall if shuffle else None)}
        times: dict[str, list[float]] = {name: [] for name in sums}
        for _ in range(repeat):
            for name, lazy in sums.items():
                began = time.perf_counter()
                client.compute(lazy).result()
                times[name].append(time.perf_counter() - began)
                print(f"{config.label()} {name}: {times[name][-1]:.2f} s", file=sys.stderr)
    return {name: min(found) for name, found in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="+", metavar="N,M,U,R", help="the cases")
    parser.add_argument("--workers", type=int, default=2, help="workers (default: 2)")
    parser.add_argument("--memory-limit", default="4GiB", help="per worker (default: 4GiB)")
    parser.add_argument("--repeat", type=int, default=3, help="computes of each (default: 3)")
    parser.add_argument("--shuffle", action="store_true", help="time dask.array.shuffle too")
    args = parser.parse_args(argv)
    print(
        "| case | workers | scatter s | rechunk p2p s | rechunk tasks s | shuffle s | "
        "scatter / p2p | scatter / shuffle |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for spec in args.specs:
        config = AlongConfig.parse(spec)
        best = run(config, args.workers, args.memory_limit, args.repeat, args.shuffle)
        cells = [config.label(), str(args.workers)]
        names = ("scatter", "rechunk p2p", "rechunk tasks", "shuffle")
        cells += [f"{best[k]:.2f}" if k in best else "-" for k in names]
        cells += [f"{best['scatter'] / best[k]:.2f}x" if k in best else "-" for k in names[1::2]]
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
