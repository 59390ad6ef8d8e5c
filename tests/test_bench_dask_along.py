"""The along-axis case of the Dask bench (``scatterx_bench.dask_along``, issue 25): seeded
arrays in the chunks asked, a result that sums to the in-memory answer, the table.

Times are never asserted (performance.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scatterx import scatter_elements
from scatterx_bench.cli import main as bench_main
from scatterx_bench.dask_along import (
    AlongConfig,
    along_arrays,
    main,
    numba_s,
    run_cluster,
    run_threads,
)

SMALL = AlongConfig(size=300, data_chunks=7, updates=2000, update_chunks=13)


@pytest.fixture
def dask_array() -> Any:
    return pytest.importorskip("dask.array")


def _expected(config: AlongConfig) -> float:
    data, indices, updates = (a.compute() for a in along_arrays(config))
    result = scatter_elements(data, indices, updates, reduction="add", backend="numpy")
    return float(result.astype(np.float64).sum())


def test_the_arrays_are_seeded_and_chunked_as_asked(dask_array: Any) -> None:
    data, indices, updates = along_arrays(SMALL)
    assert (data.numblocks, indices.numblocks, updates.numblocks) == ((7,), (13,), (13,))
    assert (data.shape, indices.shape, data.dtype, updates.dtype) == (
        (300,),
        (2000,),
        np.float32,
        np.float32,
    )
    again = along_arrays(SMALL)[1].compute()
    np.testing.assert_array_equal(indices.compute(), again)
    assert again.min() >= 0
    assert again.max() < 300
    assert len(set(again.tolist())) > 200


def test_threads_sum_to_the_in_memory_answer(dask_array: Any) -> None:
    found = run_threads(SMALL)
    assert found.total == _expected(SMALL)
    assert found.where == "threads"
    assert found.tasks > 7 + 13
    assert AlongConfig.parse("300,7,2e3,13") == SMALL
    assert numba_s(SMALL)[1] == found.total


def test_a_cluster_sums_to_the_in_memory_answer_and_the_table_prints(
    dask_array: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("distributed")
    found = run_cluster(SMALL, 2, "1GiB")
    assert found.total == _expected(SMALL)
    assert found.where == "2 workers"
    assert len(found.peak_bytes) == 2
    main(["60,3,100,4"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| case | where | tasks |")
    assert lines[2].startswith("| 6e+01/3 <- 1e+02/4 | threads |")


def test_bench_dask_along_prints_its_table_and_records_it(
    dask_array: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pytest.importorskip("distributed")
    argv = ["--library", "dask", "--case", "last-axis-sparse", "--reduction", "add"]
    argv += ["--size", str(1 / 512), "--repeat", "1", "--dask-scaling-gib", "0"]
    argv += ["--dask-along", "60,3,100,4", "--dask-workers", "1"]
    argv += ["--json", str(tmp_path / "run.json")]
    assert bench_main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    table = [line for line in lines if line.startswith("| 6e+01/3 <- 1e+02/4 |")]
    assert [line.split(" | ")[1] for line in table] == ["threads", "1 workers"]
    record = json.loads((tmp_path / "run.json").read_text())
    along = record["libraries"]["dask"]["along"]
    assert [r["where"] for r in along] == ["threads", "1 workers"]
    assert along[0]["sum"] == along[1]["sum"]
    assert along[0]["case"]["size"] == 60
