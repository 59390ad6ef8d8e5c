"""``python asv_bench/bench.py --library dask``: the chunks, the calls, the table, the scaling case.

Times are never asserted (performance.md): these check what is timed (the recommended
chunking, calls that give the oracle's answer), the table's rows and columns, the JSON
record, and that the scaling case computes the in-memory answer on every cluster.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scatterx import scatter_elements
from scatterx.testing import reference_scatter_elements
from scatterx_bench.cases import make_case
from scatterx_bench.cli import main as bench_main
from scatterx_bench.dask_arrays import to_dask
from scatterx_bench.dask_bench import (
    COLUMNS,
    compute_call,
    describe_chunks,
    layout,
    persist_call,
)
from scatterx_bench.dask_scaling import ScalingConfig, run_scaling, scaling_arrays
from scatterx_bench.libraries import to_library

TINY = 1 / 512  # as in test_bench_libraries.py: a few thousand updates
# The scaling case at a tiny size: 16 rows of 16384 float32 in blocks of 4 rows.
TINY_SCALING = {"gib": 1 / 1024, "chunk_size": "256KiB", "memory_limit": "512MiB"}


@pytest.fixture
def dask_array() -> Any:
    return pytest.importorskip("dask.array")


@pytest.fixture
def distributed() -> Any:
    pytest.importorskip("dask.array")
    return pytest.importorskip("distributed")


def test_describe_chunks() -> None:
    assert describe_chunks(((4096,), (2048, 2048))) == "4096 x 2*2048"
    assert describe_chunks(((5, 5, 3),)) == "2*5+3"
    assert describe_chunks(((3, 5),)) == "2 chunks of 3..5"
    assert describe_chunks(((0,), (7,))) == "0 x 7"  # an empty dimension
    assert describe_chunks(()) == "()"


@pytest.mark.parametrize("name", ["square-random", "last-axis-sparse"])
def test_to_dask_keeps_the_axis_whole_and_chunks_like_data(dask_array: Any, name: str) -> None:
    case = make_case(name, 1 / 16)
    moved = to_dask(case, "64KiB")
    data = moved.data
    for made, source in zip(moved.arrays, case.arrays, strict=True):
        assert isinstance(made, dask_array.Array)
        assert made.dtype == source.dtype
        assert made.chunks[case.axis] == (source.shape[case.axis],)  # the axis whole
        assert made.npartitions > 1  # the other dimension cut by dask
        np.testing.assert_array_equal(made.compute(scheduler="sync"), source)
        # Indices and updates: data's chunks off the axis, cut to their length.
        for d, sizes in enumerate(made.chunks):
            if d != case.axis:
                edges = np.cumsum(sizes)
                assert set(edges) <= {*np.cumsum(data.chunks[d]), source.shape[d]}, made.chunks
    # "auto" keeps data's blocks near the size; an axis longer than it is kept whole anyway.
    block = np.prod([max(c) for c in data.chunks]) * data.dtype.itemsize
    axis_bytes = case.data.shape[case.axis] * data.dtype.itemsize
    assert block <= max(64 * 1024, axis_bytes), data.chunks
    assert to_library(case, "dask").data.chunks[case.axis] == (case.data.shape[case.axis],)


@pytest.mark.parametrize("name", ["embedding-grad", "last-axis-sparse"])
@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_persist_and_compute_give_the_oracle_answer(
    dask_array: Any, name: str, reduction: str
) -> None:
    case = make_case(name, TINY)
    moved = to_dask(case, "16KiB")  # several blocks off the axis
    assert moved.data.npartitions > 1
    expected = reference_scatter_elements(*case.arrays, axis=case.axis, reduction=reduction)
    persisted = persist_call(moved, reduction)()
    assert isinstance(persisted, dask_array.Array)
    assert persisted.chunks == moved.data.chunks
    np.testing.assert_array_equal(persisted.compute(scheduler="sync"), expected)
    computed = compute_call(moved, reduction)()
    assert isinstance(computed, np.ndarray)
    np.testing.assert_array_equal(computed, expected)


def test_layout_counts_blocks_and_tasks(dask_array: Any) -> None:
    case = make_case("last-axis-sparse", TINY)
    one = layout(to_dask(case, "64MiB"))
    assert one.blocks == {"data": 1, "indices": 1, "updates": 1}
    assert one.chunks["data"] == "16 x 1024"
    several = layout(to_dask(case, "16KiB"))
    assert several.blocks["data"] > 1
    assert several.tasks > one.tasks  # more blocks, and the guard


def test_scaling_arrays_are_seeded_and_chunked_by_rows(dask_array: Any) -> None:
    config = ScalingConfig(**TINY_SCALING)  # type: ignore[arg-type]
    assert (config.rows, config.columns) == (16, 16384)
    assert config.row_chunks == (4, 4, 4, 4)
    data, indices, updates = scaling_arrays(config)
    assert data.chunks == (config.row_chunks, (config.columns,))
    assert indices.chunks == updates.chunks == (config.row_chunks, (config.per_row,))
    assert (data.dtype, indices.dtype, updates.dtype) == (np.float32, np.int64, np.float32)
    first = [a.compute(scheduler="sync") for a in (data, indices, updates)]
    again = [a.compute(scheduler="sync") for a in scaling_arrays(config)]
    for one, two in zip(first, again, strict=True):
        np.testing.assert_array_equal(one, two)  # the same seeds, the same blocks
    assert not np.array_equal(first[0][:4], first[0][4:8])  # each block its own seed
    assert first[1].min() >= 0
    assert first[1].max() < config.columns
    assert first[0].min() >= 0.5
    assert first[0].max() < 1.5


def _expected_block_sums(config: ScalingConfig) -> list[float]:
    """The scaling case computed in memory, summed per block of rows as the workers do."""
    data, indices, updates = (a.compute(scheduler="sync") for a in scaling_arrays(config))
    out = scatter_elements(data, indices, updates, axis=1, reduction=config.reduction)
    bounds = np.cumsum((0, *config.row_chunks))
    return [float(out[lo:hi].sum(dtype=np.float64)) for lo, hi in itertools.pairwise(bounds)]


def test_bench_dask_prints_its_table_and_the_scaling_case(
    distributed: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["--library", "dask", "--case", "last-axis-sparse", "--reduction", "add"]
    argv += ["--reduction", "max", "--size", str(TINY), "--repeat", "1"]
    argv += ["--dask-chunk-size", TINY_SCALING["chunk_size"]]
    argv += ["--dask-scaling-gib", str(TINY_SCALING["gib"])]
    argv += ["--dask-memory-limit", TINY_SCALING["memory_limit"]]
    argv += ["--dask-workers", "1", "--dask-workers", "2", "--json", str(tmp_path / "run.json")]
    assert bench_main(argv) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert lines[0].startswith("scatterx on dask arrays (threaded scheduler, chunks near 256KiB")
    assert lines[1].split() == [
        "case",
        "red",
        "numba",
        "on",
        "numpy",
        "dask",
        "persist",
        "persist/numba",
        "dask",
        "compute",
        "compute/numba",
    ], out.err
    assert [line.split()[:2] for line in lines[2:4]] == [
        ["last-axis-sparse", "add"],
        ["last-axis-sparse", "max"],
    ]
    assert not any(line.split()[2:].count("-") for line in lines[2:4]), out.out  # all timed
    assert "dask persist / numba: highest" in out.out
    assert "(target <= 1.50x)" in out.out
    chunks = lines.index(next(line for line in lines if line.startswith("chunks")))
    assert lines[chunks + 2].split()[:4] == ["last-axis-sparse", "16", "x", "1024"]
    scaling = next(k for k, line in enumerate(lines) if line.startswith("scaling:"))
    assert "float32 (16, 16384)" in lines[scaling]
    assert "4 blocks of up to 4 rows" in lines[scaling]
    runs = [line.split() for line in lines[scaling + 3 : scaling + 5]]
    assert [run[0] for run in runs] == ["1", "2"], out.out
    assert "failed" not in out.out, out.out
    assert "same block checksums on every cluster: yes" in out.out
    assert "speed-up from 1 to 2 workers" in out.out
    assert "3x3" not in out.out  # no 3x3 call on dask arrays
    assert "2 blocks: compute / numba highest" in out.out  # scatterx_bench.dask_blocks
    assert "4 blocks: compute / numba highest" in out.out

    saved = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    run = saved["libraries"]["dask"]
    assert run["columns"] == list(COLUMNS)
    assert run["blocks"] == [2, 4]
    assert [row["reduction"] for row in run["rows"]] == ["add", "max"]
    assert run["layouts"]["last-axis-sparse"]["blocks"] == {
        "data": 1,
        "indices": 1,
        "updates": 1,
    }
    assert "dask" in saved["versions"]
    scaled = run["scaling"]
    assert scaled["config"]["shape"] == [16, 16384]
    assert scaled["config"]["memory_limit_bytes"] == 512 * 2**20
    config = ScalingConfig(**TINY_SCALING)  # type: ignore[arg-type]
    expected = _expected_block_sums(config)
    for found in scaled["runs"]:
        assert found["error"] is None
        assert found["restarted"] == 0
        assert found["block_checksums"] == expected  # the in-memory answer, bit for bit
        peaks = found["worker_peak_bytes"]
        assert len(peaks) == found["workers"]
        if sys.platform == "linux":
            assert all(0 < peak < 512 * 2**20 for peak in peaks)
        assert found["sampler_peak_bytes"] > 0


def test_scaling_reports_a_failed_computation(distributed: Any) -> None:
    # In-process workers without a memory limit (the test process is the worker's process).
    config = ScalingConfig(
        **{**TINY_SCALING, "memory_limit": "0"},  # type: ignore[arg-type]
        processes=False,
        timeout_s=1e-6,
    )
    found = run_scaling(config, 1)
    assert found.checksums is None
    assert found.checksum is None
    assert found.error is not None
    assert found.error.startswith("TimeoutError"), found.error


def test_bench_dask_not_installed_is_skipped_with_its_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "dask", None)  # as if not installed
    argv = ["--library", "dask", "--case", "1d-histogram", "--size", str(TINY)]
    assert bench_main([*argv, "--repeat", "1"]) == 0
    out = capsys.readouterr()
    assert "skipped library dask: dask is not installed (pip install 'scatterx[dask]')" in out.err
    assert out.out.startswith("load average")  # no table


def test_bench_dask_options_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    for wrong in (["--dask-workers", "0"], ["--dask-scaling-gib", "-1"]):
        with pytest.raises(SystemExit) as stopped:
            bench_main(["--library", "dask", *wrong])
        assert stopped.value.code == 2
    assert "--dask-workers 1 or more" in capsys.readouterr().err
