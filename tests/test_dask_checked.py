"""The dask backend's plans for small results (issue 46): chains that check their own
indices in place of a guard's pass, data chunked along the axis put whole rather than
routed to. Each plan against the one it replaces: the same bits, the same errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import _dask_checks as checks
import scatterx
from scatterx.testing import Case, all_cases, run_case
from scatterx_dask import _plan, _run, test_chunks
from test_dask_backend import BAD_CHUNKINGS, BAD_INDICES, CHUNKINGS

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

Array = np.ndarray[Any, Any]


@pytest.fixture(params=["self-checked", "guard"])
def plan(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each plan of data whole along the axis: the chains check their own indices (small
    results), or a guard's pass over a clone of them does (``SELF_CHECKED_CHUNKS`` 0)."""
    if request.param == "guard":
        monkeypatch.setattr(_run, "SELF_CHECKED_CHUNKS", 0)
    return str(request.param)


def _scatter(arrays: tuple[Array, ...], chunks: tuple[Any, ...], **kwargs: Any) -> Any:
    lazy = [da.from_array(a, chunks=c) for a, c in zip(arrays, chunks, strict=True)]
    return scatterx.scatter_elements(*lazy, **kwargs)


def _task_names(result: Any) -> set[str]:
    return {str(k[0] if isinstance(k, tuple) else k) for k in result.__dask_graph__()}


@checks.over_bounds_grid(BAD_CHUNKINGS)
def test_each_plan_raises_the_first_bad_index_in_c_order(
    plan: str, axis: int, chunking: str, scheduler: str
) -> None:
    data, indices = checks.bad_indices(*BAD_INDICES[axis])
    data_chunks, index_chunks, update_chunks = BAD_CHUNKINGS[chunking]
    chunks = (checks.side_chunks(data_chunks, axis), index_chunks, update_chunks)
    with dask.config.set(scheduler=checks.refuse):
        result = _scatter((data, indices, np.ones(indices.shape)), chunks, axis=axis)
    _, message = checks.first_bad(indices, axis, data.shape[axis])
    parts = (result, result.blocks[(0,) * data.ndim], result.blocks[(-1,) * data.ndim])
    checks.assert_each_raises(parts, message, scheduler)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max"])
@pytest.mark.parametrize("axis", [0, 1])
def test_each_plan_gives_the_numpy_backends_bits(plan: str, axis: int, reduction: str) -> None:
    rng = np.random.default_rng(axis)
    shape, index_shape = [[(13, 9), (31, 9)], [(9, 13), (9, 31)]][axis]
    data = rng.standard_normal(shape).astype(np.float32)
    indices = rng.integers(-13, 13, index_shape)
    updates = (rng.standard_normal(index_shape) * 1e3).astype(np.float32)
    off = tuple(-1 if d == axis else 4 for d in range(2))
    rows = tuple(7 if d == axis else 4 for d in range(2))
    result = _scatter((data, indices, updates), (off, rows, off), axis=axis, reduction=reduction)
    checked = any("-bad" in name for name in _task_names(result))
    assert checked == (plan == "self-checked")
    assert any("checked-" in name for name in _task_names(result)) != checked
    expected = scatterx.scatter_elements(
        data, indices, updates, axis=axis, reduction=reduction, backend="numpy"
    )
    assert result.compute().tobytes() == expected.tobytes()


def test_a_result_above_the_bound_is_guarded() -> None:
    """Each block of a self-checked result waits for every chain: only a small result
    (at most SELF_CHECKED_CHUNKS of dask's chunk size) is made so."""
    data, indices = np.zeros((40, 9)), np.zeros((40, 6), np.int64)
    chunks = ((-1, 3), (-1, 3), (-1, 3))
    with dask.config.set({"array.chunk-size": "1KiB"}):  # data: 2,880 bytes
        above = _task_names(_scatter((data, indices, np.ones((40, 6))), chunks, axis=0))
    with dask.config.set({"array.chunk-size": "2MiB"}):
        below = _task_names(_scatter((data, indices, np.ones((40, 6))), chunks, axis=0))
    assert any("checked-" in name for name in above)
    assert not any("-bad" in name for name in above)
    assert any("-bad" in name for name in below)


def test_one_in_memory_call_per_block_lined_up() -> None:
    """Blocks of indices and updates lined up with data's (the axis whole): one task per
    block of the result runs the in-memory call, and none reads a second copy of indices."""
    data, indices = np.zeros((64, 40)), np.zeros((50, 40), np.int64)
    result = _scatter((data, indices, np.ones((50, 40))), ((-1, 10),) * 3, axis=0)
    graph = dict(result.__dask_graph__())
    folds = [k for k in graph if isinstance(k, tuple) and "-fold-" in str(k[0])]
    assert len(folds) == 4
    assert not any("checked-" in name for name in _task_names(result))


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_small_data_along_the_axis_is_put_whole_not_routed(reduction: str) -> None:
    rng = np.random.default_rng(1)
    data = rng.standard_normal(40).astype(np.float32)
    indices = rng.integers(-40, 40, 300)
    updates = rng.standard_normal(300).astype(np.float32)
    result = _scatter((data, indices, updates), (20, 150, 150), reduction=reduction)
    assert result.chunks == ((20, 20),)
    ours = [n.split("-") for n in _task_names(result) if n.startswith("scatter_elements-")]
    assert {n[2] for n in ours if len(n) > 2} == {"fold", "bad", "guard"}  # no route
    expected = scatterx.scatter_elements(data, indices, updates, reduction=reduction)
    assert result.compute().tobytes() == expected.tobytes()
    bad = indices.copy()
    bad[[7, 200]] = [40, -41]
    _, message = checks.first_bad(bad, 0, 40)
    lazy = _scatter((data, bad, updates), (20, 150, 150))
    checks.assert_each_raises((lazy, lazy.blocks[1]), message, "threads")


def test_large_data_along_the_axis_is_routed_to() -> None:
    """A column of data larger than every block of the inputs is not put whole."""
    assert not _plan.merged_along(((20, 20),), ((30,) * 10,), ((30,) * 10,), 0)
    assert _plan.merged_along(((20, 20),), ((40,) * 10,), ((30,) * 10,), 0)
    assert not _plan.merged_along(((40,),), ((40,) * 10,), ((30,) * 10,), 0)  # whole already
    assert _plan.merged_along(((2, 2), (3, 3)), ((1,), (12,)), ((1,), (12,)), 0)
    assert not _plan.merged_along(((2, 2), (3, 3)), ((1,), (11,)), ((1,), (11,)), 0)


_ROUTED_CASES = [
    pytest.param(chunking, case, id=f"{chunking}-{case.name}")
    for chunking in ("along-axis", "mixed")
    for case in all_cases()
    if case.reduction in ("none", "add")
]


@pytest.mark.parametrize(("chunking", "case"), _ROUTED_CASES)
def test_conformance_routed_and_guarded(
    monkeypatch: pytest.MonkeyPatch, chunking: str, case: Case
) -> None:
    """The conformance cases on the plans that small data no longer takes: routed to along
    the axis, guarded off it."""
    monkeypatch.setattr(_plan, "MERGE_ALONG", False)
    monkeypatch.setattr(_run, "SELF_CHECKED_CHUNKS", 0)
    with test_chunks(CHUNKINGS[chunking](case)):
        outcome = run_case("dask", case)
    if outcome.status == "skipped":
        pytest.skip(outcome.detail)
    assert outcome.status == "passed", outcome.detail
