"""``scatterx_bench.dask_p2p``: the routed scatter and Dask's own data movement on one
cluster. Times are never asserted (performance.md)."""

from __future__ import annotations

import numpy as np
import pytest

from scatterx_bench.dask_along import AlongConfig
from scatterx_bench.dask_p2p import ROW, WORDS, anchors, moved_arrays, run

pytest.importorskip("dask.array")

SMALL = AlongConfig(size=4096, data_chunks=4, updates=3000, update_chunks=6)


def test_the_anchors_move_the_bytes_of_indices_and_updates() -> None:
    wide, tall = moved_arrays(SMALL)
    assert wide.nbytes == tall.nbytes == SMALL.updates * WORDS * 4
    assert wide.numblocks == (SMALL.update_chunks, 1)
    assert tall.numblocks == (SMALL.update_chunks, 1)
    assert tall.shape[1] == ROW
    sums = anchors(SMALL, wide, tall)
    expected = float(wide.astype(np.float64).sum().compute())
    assert float(sums["rechunk tasks"].compute()) == pytest.approx(expected)
    assert float(sums["shuffle"].compute()) == pytest.approx(float(tall.sum().compute()))


def test_one_cluster_times_the_scatter_and_each_anchor() -> None:
    pytest.importorskip("distributed")
    best = run(SMALL, 2, "512MiB", 1, shuffle=True)
    assert set(best) == {"scatter", "rechunk p2p", "rechunk tasks", "shuffle"}
    assert all(seconds > 0 for seconds in best.values())
