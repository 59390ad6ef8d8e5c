"""The memory floor of ``bench.py --hand`` (scatterx_bench.floor): its byte count against a
brute-force count, element by element. Times are never asserted (performance.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scatterx_bench.cases import make_case
from scatterx_bench.floor import DEFAULT_CACHE, LINE, floor_bytes, last_level_cache, touched_lines


def _brute_lines(data: Any, indices: Any, axis: int) -> int:
    base = data.__array_interface__["data"][0]
    lines = set()
    for position in np.ndindex(*indices.shape):
        where = list(position)
        where[axis] = int(indices[position])
        address = base + sum(k * s for k, s in zip(where, data.strides, strict=True))
        lines.add(address // LINE)
    return len(lines)


@pytest.mark.parametrize("name", ["square-random", "square-transposed", "last-axis-sparse"])
def test_touched_lines_match_a_count_element_by_element(name: str) -> None:
    case = make_case(name, 1 / 256)
    # Three rows of updates only: most lines of data stay untouched, so a wrong address shows.
    indices = case.indices[:3]
    assert touched_lines(case.data, indices, case.axis) == _brute_lines(
        case.data, indices, case.axis
    )


def test_floor_bytes_count_data_only_where_it_cannot_stay_in_cache() -> None:
    case = make_case("square-random", 1 / 64)
    streamed = case.indices.nbytes + case.updates.nbytes
    data = case.data.nbytes
    assert floor_bytes(case, "new", cache=2 * data) == streamed
    assert floor_bytes(case, "new", cache=data) == streamed + 2 * data
    assert floor_bytes(case, "in-place", cache=data) == streamed
    lines = touched_lines(case.data, case.indices, case.axis)
    assert 0 < lines <= data // LINE + 1
    assert floor_bytes(case, "in-place", cache=data - 1) == streamed + 2 * LINE * lines


def test_the_last_level_cache_is_the_largest_listed(tmp_path: Path) -> None:
    for index, size in enumerate(["32K", "512K", "32768K"]):
        (tmp_path / f"index{index}").mkdir()
        (tmp_path / f"index{index}" / "size").write_text(f"{size}\n")
    assert last_level_cache(tmp_path) == 32 << 20
    assert last_level_cache(tmp_path / "none") == DEFAULT_CACHE


def test_the_hand_table_gives_each_cell_its_floor_and_the_most_a_lead_could_be(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from scatterx_bench.hand_bench import HandRow, print_rows
    from scatterx_bench.timing import Timed

    def timed(ms: float) -> Timed:
        return Timed(ms, 0.0, (ms,))

    rows = [
        HandRow("1d-histogram", "add", "new", timed(2.0), timed(2.0), {"torch": timed(3.0)}, 1.0),
        HandRow("1d-histogram", "max", "new", timed(2.0), timed(1.0), {"torch": timed(12.0)}, 0.5),
    ]
    print_rows(rows)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[-3:] == ["1.00", "2.00", "3.00x"]
    assert lines[2].split()[-3:] == ["0.50", "4.00", "24.00x"]
    # Geometric means: peer/numba of 1.5 and 6 is 3; peer/floor of 3 and 24 is about 8.49.
    assert (
        "peer/numba geometric mean 3.00x, lowest 1.50x; peer/floor geometric mean 8.49x"
        in (lines[3])
    )
