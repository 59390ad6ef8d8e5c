"""The gather rows of the benchmark's standard table and its 3-D middle-axis layout case.

Times are never asserted (performance.md): these check what each contestant of a gather row
computes, in both modes, and that the layout cases have the dtypes and layout they name.
"""

from __future__ import annotations

import numpy as np
import pytest

from scatterx_bench.base import Unavailable
from scatterx_bench.cases import CPU_PEERS, GATHER, build_call, gather_case, make_case

TINY = 1 / 512
CASES = ("last-axis-sparse", "square-transposed", "mid-axis-3d")


@pytest.mark.parametrize("mode", ["new", "in-place"])
@pytest.mark.parametrize("contestant", ["numpy", *CPU_PEERS])
@pytest.mark.parametrize("name", CASES)
def test_every_contestant_of_a_gather_row_takes_along_the_axis(
    name: str, contestant: str, mode: str
) -> None:
    case = make_case(name, TINY)
    pristine = case.data.copy()
    try:
        call = build_call(contestant, case, GATHER, mode)  # type: ignore[arg-type]
    except Unavailable as why:
        pytest.skip(str(why))
    expected = np.take_along_axis(case.data, case.indices, case.axis)
    for _ in range(2):  # in place, the second call writes over the first's result
        got = np.asarray(call())
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == case.data.dtype
    np.testing.assert_array_equal(case.data, pristine)


def test_numpy_has_no_gather_into_out() -> None:
    with pytest.raises(Unavailable, match="take_along_axis has no out="):
        build_call("numpy-peer", make_case("last-axis-sparse", TINY), GATHER, "in-place")


def test_a_gather_case_keeps_data_and_indices_and_drops_updates() -> None:
    case = make_case("square-random", TINY)
    gathered = gather_case(case)
    assert gathered.op == "gather_elements"
    assert gathered.updates is None
    assert gathered.data is case.data
    assert gathered.indices is case.indices


def test_the_middle_axis_case_is_float64_with_int32_indices() -> None:
    case = make_case("mid-axis-3d", 1 / 16)
    assert case.data.dtype == np.float64
    assert case.indices.dtype == np.int32
    assert case.updates.dtype == np.float64
    assert case.axis == 1
    assert case.data.shape == (4, 1024, 128)
    assert case.indices.shape == (4, 256, 128)
    assert case.indices.min() >= 0
    assert case.indices.max() < 1024


def test_torch_adds_with_scatter_add() -> None:
    torch = pytest.importorskip("torch")
    case = make_case("last-axis-sparse", TINY)
    call = build_call("torch", case, "add", "in-place")
    data = torch.from_numpy(case.data.copy())
    data.scatter_add_(1, torch.from_numpy(case.indices), torch.from_numpy(case.updates))
    torch.testing.assert_close(torch.as_tensor(np.asarray(call())), data, rtol=0, atol=0)
    assert "scatter_add" in repr(getattr(call, "func", call))
