"""The standard cases in a few blocks (``scatterx_bench.dask_blocks``): how they are split,
what is timed, and the table. Times are never asserted (performance.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scatterx import scatter_elements
from scatterx_bench.cases import CASE_NAMES, make_case
from scatterx_bench.dask_blocks import block_calls, blocked, print_blocks, split_dimension

TINY = 1 / 512

pytest.importorskip("dask.array")


@pytest.mark.parametrize("blocks", [2, 4])
@pytest.mark.parametrize("name", CASE_NAMES)
def test_data_is_split_off_the_axis_and_the_rest_lined_up(name: str, blocks: int) -> None:
    case = make_case(name, TINY)
    moved = blocked(case, blocks)
    split = split_dimension(case)
    assert split == {"last-axis-sparse": 0, "1d-histogram": 0}.get(name, 1)
    data, indices, updates = moved.arrays
    assert len(data.chunks[split]) == blocks
    for array in (indices, updates):
        assert array.chunks == indices.chunks
        for d, sizes in enumerate(array.chunks):
            if d == split == case.axis:
                assert len(sizes) == blocks  # 1-d: along the axis, blocks of their own
            elif d == split:
                assert sizes == data.chunks[d][: len(sizes)]
            else:
                assert len(sizes) == 1


@pytest.mark.parametrize("name", CASE_NAMES)
def test_the_calls_give_the_in_memory_answer_and_data(name: str) -> None:
    case = make_case(name, TINY)
    calls = block_calls(blocked(case, 2), "add", 2)
    assert list(calls) == ["compute, 2 blocks", "floor, 2 blocks"]
    expected = scatter_elements(*case.arrays, axis=case.axis, reduction="add", backend="numpy")
    assert calls["compute, 2 blocks"]().tobytes() == expected.tobytes()
    assert calls["floor, 2 blocks"]().tobytes() == np.asarray(case.data).tobytes()


def test_the_table_has_a_ratio_per_block_count(capsys: pytest.CaptureFixture[str]) -> None:
    times: dict[str, Any] = {"numba": 2.0, "compute, 2 blocks": 3.0, "floor, 2 blocks": 1.0}
    times |= {"compute, 4 blocks": 5.0}
    print_blocks([("square-random", "add", times)], "numba", 1.5)
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split()[:3] == ["case", "red", "numba"]
    row = "square-random add 2.00 3.00 1.50x 1.00 0.50x 5.00 2.50x - -"
    assert lines[3].split() == row.split()
    assert lines[4] == "2 blocks: compute / numba highest 1.50x (target <= 1.5x)"
    assert lines[5] == "4 blocks: compute / numba highest 2.50x (target <= 1.5x)"
