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
    AlongResult,
    InMemory,
    _repeated,
    along_arrays,
    along_row,
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
    found = run_threads(SMALL, repeat=2)
    assert found.total == _expected(SMALL)
    assert found.where == "threads"
    assert found.tasks > 7 + 13
    assert AlongConfig.parse("300,7,2e3,13") == SMALL
    assert 0 < found.best_s <= found.compute_s
    assert 0 < found.cpu_s[1] <= found.cpu_s[0]
    in_memory = numba_s(SMALL, repeat=2)
    assert in_memory.total == found.total
    assert 0 < in_memory.best_s <= in_memory.first_s


def test_the_gather_case_sums_to_the_in_memory_gather(dask_array: Any) -> None:
    """``--gather``: random data (not the scatter's zeros) read at the case's indices."""
    from dataclasses import replace

    from scatterx import gather_elements

    config = replace(SMALL, gather=True)
    data, indices, _ = (a.compute() for a in along_arrays(config))
    assert np.unique(data).size > 250
    expected = float(gather_elements(data, indices, backend="numpy").astype(np.float64).sum())
    found = run_threads(config, repeat=1)
    assert found.total == expected == numba_s(config, repeat=1).total
    assert found.tasks < 7 * 13  # a chain per block of indices made 7 x 13 reads
    assert "->" in found.config.label()


def test_repeated_reports_the_first_and_the_best() -> None:
    """The first call's wall and CPU, the best wall, the least CPU, the last answer."""
    answers, clock = iter([1.0, 2.0, 3.0]), iter([0.0, 5.0, 5.0, 7.0, 7.0, 8.0])
    first, best, cpu, total = _repeated(lambda: next(answers), lambda: next(clock), 3)
    assert (cpu, total) == ((5.0, 1.0), 3.0)
    assert 0 <= best <= first
    assert _repeated(lambda: 4.0, lambda: 0.0, 0)[3] == 4.0  # at least one call


def test_a_row_holds_the_first_and_best_computes_and_their_ratios_to_numba() -> None:
    found = AlongResult(SMALL, "threads", 40, 0.01, 6.0, [2**30], 12.5, 1.5, (7.0, 2.0))
    cells = along_row(found, InMemory(1.0, 0.5, 12.5)).strip("| ").split(" | ")
    assert cells[4:12] == ["6.000", "1.500", "7.000", "2.000", "1.000", "0.500", "12.00x", "3.00x"]
    assert cells[12:] == ["1024", "12.5"]
    assert along_row(found, None).split(" | ")[8:12] == ["-", "-", "-", "-"]


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
    assert lines[0].startswith("| case | where | tasks | build s | compute s first | best |")
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
    assert along[0]["best_s"] <= along[0]["compute_s"]
    assert along[0]["numba_s"] <= along[0]["numba_first_s"]
    assert along[0]["case"]["size"] == 60
