"""The dask backend's routing of updates to data chunked along the axis (issue 25): a graph
that grows with the blocks, not their product, and the loop's bits through every stage."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx_dask import _graph, _route

da = pytest.importorskip("dask.array")

Array = np.ndarray[Any, Any]


def _tasks(n: int) -> int:
    """The tasks of the issue's example: ``n`` elements, chunks of 1 everywhere."""
    indices = da.from_array(np.arange(n) % 7, chunks=1)
    result = scatterx.scatter_elements(
        da.zeros(n, chunks=1), indices, da.ones(n, chunks=1), reduction="add"
    )
    return len(result.__dask_graph__())


def test_the_graph_grows_with_the_blocks_not_their_product() -> None:
    small, large = _tasks(100), _tasks(400)
    assert large < 5 * small  # quadratic: 16x (10,506 and 162,015 tasks before)
    assert large < 12 * 400


@pytest.mark.parametrize(
    ("origins", "destinations", "fan_in"), [(1, 9, 2), (9, 1, 2), (7, 30, 3), (2000, 2000, 32)]
)
def test_the_stages_reach_every_destination(origins: int, destinations: int, fan_in: int) -> None:
    count, base = _route.stages(origins, destinations, fan_in)
    assert 2 <= base <= max(fan_in, 2)
    assert base**count >= max(origins, destinations) > (base - 1) ** count
    last = base**count
    assert all(_route.exists(k, last, origins, destinations) for k in range(destinations))


@pytest.mark.parametrize("fan_in", [2, 3, 32])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max"])
def test_routed_updates_keep_the_loops_bits(
    monkeypatch: pytest.MonkeyPatch, fan_in: int, axis: int, reduction: str
) -> None:
    """Float32 sums over many duplicates, through several stages of small fan-in: the
    order per element is the loop's, so the bits are the numpy backend's."""
    monkeypatch.setattr(_graph, "ROUTE_FAN_IN", fan_in)
    rng = np.random.default_rng(fan_in * 10 + axis)
    shape, index_shape = [[23, 5], [5, 23]][axis], [[61, 4], [4, 61]][axis]
    data = rng.standard_normal(shape).astype(np.float32)
    indices = rng.integers(-23, 23, index_shape)
    updates = (rng.standard_normal(index_shape) * 1e3).astype(np.float32)
    data_chunks = [((3, 0, 7, 1, 12), (2, 3)), ((2, 3), (3, 0, 7, 1, 12))][axis]
    index_chunks = [((5,) * 12 + (1,), (1, 3)), ((1, 3), (5,) * 12 + (1,))][axis]
    arrays = (
        da.from_array(data, chunks=data_chunks),
        da.from_array(indices, chunks=index_chunks),
        da.from_array(updates, chunks=index_chunks),
    )
    got = scatterx.scatter_elements(*arrays, axis=axis, reduction=reduction).compute()
    expected = scatterx.scatter_elements(
        data, indices, updates, axis=axis, reduction=reduction, backend="numpy"
    )
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


def test_a_block_all_updates_aim_at_and_blocks_none_reach() -> None:
    data = np.arange(12.0)
    indices = np.full(30, 5)
    updates = np.arange(30.0)
    got = scatterx.scatter_elements(
        da.from_array(data, chunks=2),
        da.from_array(indices, chunks=4),
        da.from_array(updates, chunks=4),
        reduction="add",
    ).compute()
    expected = data.copy()
    expected[5] += updates.sum()
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("operation", ["scatter", "gather"])
def test_a_bad_string_is_told_at_its_place_in_the_whole_array(operation: str) -> None:
    """Issue 25, item 2: the position in the whole array, not in the block."""
    words = np.array(["a", "b", "c", "d", "e"], dtype=object)
    indices = da.from_array(np.arange(5), chunks=2)
    if operation == "scatter":
        updates = words.copy()
        updates[3] = 3
        call = scatterx.scatter_elements(
            da.from_array(words, chunks=2), indices, da.from_array(updates, chunks=2)
        )
        told = (
            r"updates is an object array and must hold str only; got 3 \(int\) at position \(3,\)"
        )
    else:
        words[4] = None
        call = scatterx.gather_elements(da.from_array(words, chunks=(3, 2)), indices)
        told = r"got None \(NoneType\) at position \(4,\)"
    with pytest.raises(TypeError, match=told):
        call.compute()
