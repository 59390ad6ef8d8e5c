"""The hand-written loops of ``bench.py --hand``: scatterx's bits, checks before writes, and a
bit check that can fail. Times are never asserted (performance.md).

A few cells only: each hand loop compiles when made (nothing cached), one family each.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

from scatterx_bench.cases import in_place_case, make_case
from scatterx_bench.hand import hand_loop
from scatterx_bench.hand_bench import check_same_bits

TINY = 1 / 512
CELLS = [
    ("square-transposed", "max", "in-place"),
    ("1d-histogram", "none", "in-place"),
    ("1d-histogram", "add", "new"),
    ("embedding-grad", "add", "in-place"),
    ("last-axis-sparse", "max", "new"),
    ("mid-axis-3d", "add", "in-place"),
    ("mid-axis-3d", "none", "new"),
]


@pytest.mark.parametrize(("name", "reduction", "mode"), CELLS)
def test_hand_loops_give_scatterx_bits(name: str, reduction: str, mode: Any) -> None:
    case = make_case(name, TINY)
    check_same_bits(case, reduction, mode, hand_loop(name, reduction, mode))


def test_a_loop_with_another_answer_is_no_comparison() -> None:
    case = make_case("last-axis-sparse", TINY)
    loop = hand_loop("last-axis-sparse", "add", "new")

    def off_by_one(data: Any, indices: Any, updates: Any) -> Any:
        return loop(data, (indices + 1) % data.shape[1], updates)

    with pytest.raises(AssertionError, match="bits differ"):
        check_same_bits(case, "add", "new", off_by_one)
    with pytest.raises(AssertionError, match="returned data's memory"):
        check_same_bits(case, "add", "new", lambda data, indices, updates: data)


def test_an_in_place_loop_writes_nothing_before_a_bad_index_is_found() -> None:
    case = in_place_case(make_case("1d-histogram", TINY), "none")
    indices = case.indices.copy()
    indices[-1] = case.data.shape[0]  # the last index, out of bounds
    before = case.data.copy()
    with pytest.raises(IndexError):
        hand_loop("1d-histogram", "none", "in-place")(case.data, indices, case.updates)
    np.testing.assert_array_equal(case.data, before)
