"""The numba backend's binned strategy (one long column, float add and mul), forced small."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import scatterx
from _subprocess import run_python
from scatterx.testing import (
    assert_bitwise_equal,
    reference_scatter_elements,
    reference_with_free_nans,
)
from scatterx_numba import _runtime, _views
from scatterx_numba._views import Strategy
from scatterx_numba.plan import launch as _launch
from scatterx_numba.plan import strategy as _strategy
from scatterx_numba.plan.strategy import Plan

numba = pytest.importorskip("numba", reason="numba is not installed (the numba extra)")

Array = np.ndarray[Any, Any]
#: Updates per wave in these tests: a few thousand updates then run in several waves.
WAVE_ROWS = 700


@pytest.fixture
def binned(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int]]]:
    """Small calls take the binned strategy, in waves of ``WAVE_ROWS``, on two threads.

    Yields the strategy and task count of each kernel launch of the test.
    """
    monkeypatch.setattr(_strategy, "BINNED_MIN_ROWS", 64)
    monkeypatch.setattr(_strategy, "BINNED_WAVE_ROWS", WAVE_ROWS)
    _launch.cache_clear()  # plans are cached: made again from these constants
    used: list[tuple[str, int]] = []
    strategies: dict[int, str] = {}
    choose, launch = _runtime.kernel, _runtime.launch

    def kernel(strategy: int, family: str, reduction: str) -> Any:
        found = choose(strategy, family, reduction)
        strategies[id(found)] = Strategy(strategy).name.lower()
        return found

    def spy(kernel: Any, *args: Any) -> Any:
        used.append((strategies.get(id(kernel), "other"), args[-1]))
        return launch(kernel, *args)

    monkeypatch.setattr(_runtime, "kernel", kernel)
    monkeypatch.setattr(_runtime, "launch", spy)
    before = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    yield used
    numba.set_num_threads(before)
    _launch.cache_clear()


def _values(
    dtype: str, shape: tuple[int, ...], rng: np.random.Generator, near: float = 0.0
) -> Array:
    """Random values (about ``near``, or spread) with NaN, infinities and both zeros: sums
    and products of them in another order would differ in their bits."""
    values = rng.standard_normal(shape) * (1 / 64 if near else 3) + near
    if dtype.startswith("complex"):
        values = values + 1j * rng.standard_normal(shape) / 64
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-3])
    values = np.where(rng.random(shape) < 0.1, rng.choice(special, shape), values)
    return values.astype(dtype)


def _check(data: Array, indices: Array, updates: Array, reduction: str) -> None:
    got = scatterx.scatter_elements(data, indices, updates, reduction=reduction, backend="numba")
    want, free_nans = reference_with_free_nans(data, indices, updates, reduction=reduction)
    # Any NaN payload only where two NaNs met (contract section 2).
    assert_bitwise_equal(got, want, any_nan=free_nans)


@pytest.mark.parametrize(
    ("dtype", "reduction"),
    [
        ("float32", "add"),
        ("float16", "add"),
        ("complex64", "mul"),
        # The same code in signatures of their own: compiling each takes seconds.
        pytest.param("float32", "mul", marks=pytest.mark.slow),
        pytest.param("float64", "add", marks=pytest.mark.slow),
        pytest.param("complex128", "add", marks=pytest.mark.slow),
        pytest.param("bfloat16", "mul", marks=pytest.mark.slow),
    ],
)
def test_histogram_matches_oracle(
    binned: list[tuple[str, int]], dtype: str, reduction: str
) -> None:
    if dtype == "bfloat16":
        dtype = np.dtype(pytest.importorskip("ml_dtypes").bfloat16).name
    rng = np.random.default_rng(1)
    indices = rng.integers(-301, 301, size=5000)  # negative ones count from the end
    # Factors near 1: long products stay finite, and still round at every step.
    updates = _values(dtype, indices.shape, rng, near=1.0 if reduction == "mul" else 0.0)
    _check(_values(dtype, (301,), rng), indices, updates, reduction)
    assert binned == [("binned", 2)]


@pytest.mark.parametrize(
    ("size", "targets"),
    [
        (1, [0, -1]),  # one element: every update in the upper "half"
        (2, [0, 1]),  # one element per half
        (8, [2, 2, 2, 5]),  # duplicates, all in the lower half
        (8, [7, -1, 6]),  # all in the upper half
    ],
)
def test_duplicates_and_lopsided_halves(
    binned: list[tuple[str, int]], size: int, targets: list[int]
) -> None:
    rng = np.random.default_rng(2)
    indices = rng.choice(np.array(targets), size=3000)
    updates = _values("float32", indices.shape, rng)
    _check(_values("float32", (size,), rng), indices, updates, "add")
    assert binned == [("binned", 2)]


@pytest.mark.parametrize("n_tasks", [2, 3])
def test_any_task_count_on_the_threads_there_are(
    binned: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch, n_tasks: int
) -> None:
    """Tasks are planned for ``n_tasks`` threads and run on the two (or one) numba has."""
    monkeypatch.setattr(_runtime, "num_threads", lambda: n_tasks)
    rng = np.random.default_rng(3)
    indices = rng.integers(0, 97, size=4321)
    for threads in {1, min(2, numba.config.NUMBA_NUM_THREADS)}:
        numba.set_num_threads(threads)
        _check(_values("float32", (97,), rng), indices, _values("float32", (4321,), rng), "add")
    assert set(binned) == {("binned", n_tasks)}


def test_three_numba_threads_in_a_process_of_their_own() -> None:
    code = """
import numpy as np, scatterx
from scatterx_numba import _views
from scatterx_numba.plan import strategy as _strategy
from scatterx.testing import reference_scatter_elements
_strategy.BINNED_MIN_ROWS, _strategy.BINNED_WAVE_ROWS = 64, 700
rng = np.random.default_rng(4)
data = rng.standard_normal(50).astype(np.float32)
indices = rng.integers(-50, 50, size=3001)
updates = rng.standard_normal(3001).astype(np.float32)
assert _strategy.plan((50,), (3001,), 0, 4, 3).strategy == _views.Strategy.BINNED
got = scatterx.scatter_elements(data, indices, updates, reduction="add", backend="numba")
want = reference_scatter_elements(data, indices, updates, reduction="add")
print(got.tobytes() == want.tobytes())
"""
    assert run_python(code, env={"NUMBA_NUM_THREADS": "3"}).strip() == "True"


@pytest.mark.parametrize(
    ("bad", "first"),
    [
        ([(2999, 40), (100, -41)], 100),  # the first task's updates (applied in place)
        ([(2999, 40), (450, 99)], 450),  # a binning task's, in the first wave
        ([(2999, -99), (1500, 40), (2000, 50)], 1500),  # a later wave (of 600 updates)
    ],
)
def test_first_bad_index_as_numpy_raises_it(
    binned: list[tuple[str, int]], bad: list[tuple[int, int]], first: int
) -> None:
    rng = np.random.default_rng(5)
    indices = rng.integers(-40, 40, size=3000)
    for position, value in bad:
        indices[position] = value
    data = np.zeros(40, dtype=np.float32)
    updates = np.ones(indices.shape, dtype=np.float32)
    with pytest.raises(IndexError) as want:
        scatterx.scatter_elements(data, indices, updates, reduction="add", backend="numpy")
    with pytest.raises(IndexError) as got:
        scatterx.scatter_elements(data, indices, updates, reduction="add", backend="numba")
    assert str(got.value) == str(want.value)
    assert f"({first},)" in str(got.value)
    assert not data.any()
    assert binned[0][0] == "binned"


def test_the_kernel_writes_no_output_before_every_index_is_in_bounds(
    binned: list[tuple[str, int]],
) -> None:
    """A bad index in the last wave: the waves before ran, and the output is untouched."""
    rng = np.random.default_rng(6)
    size, rows = 64, 3000
    indices = rng.integers(0, size, size=rows)
    indices[rows - 5] = size
    data = rng.standard_normal(size).astype(np.float32)
    updates = rng.standard_normal(rows).astype(np.float32)
    out = np.full((1, size, 1), 7.0, np.float32)
    band = _strategy.wave_rows(rows)
    plan = Plan(Strategy.BINNED, 2, band)
    maps = _views.readonly(np.zeros(1, np.int64))
    arrays = (
        out,
        _views.readonly(data.reshape(1, size, 1)),
        _views.readonly(indices.reshape(1, rows, 1)),
        _views.readonly(updates.reshape(1, rows, 1)),
        maps,
        maps,
    )
    scratch = np.empty((1, band + size + band), np.float32)  # positions, base, bins
    kernel = _runtime.kernel(Strategy.BINNED, "plain", "add")
    bad = _runtime.launch(kernel, arrays, scratch, (band, True, True, False, False), plan.n_tasks)
    assert sorted(bad.tolist()) == [-1, rows - 5]  # the binning task of the last wave
    assert (out == 7.0).all()


def test_the_plan_picks_binned_for_one_long_column_of_float_arithmetic() -> None:
    histogram = ((65536,), (4194304,), 0, 4)
    assert _strategy.plan(*histogram, 2) == Plan(Strategy.BINNED, 2, 1 << 20)
    assert _strategy.plan(*histogram, 3).strategy == Strategy.BINNED
    assert _strategy.plan(*histogram, 1).strategy == Strategy.COLUMNS
    assert _strategy.plan(*histogram, 2, regroupable=True).strategy == Strategy.SEGMENTS
    assert _strategy.plan(*histogram, 4).strategy == Strategy.OWNERS
    # Too few updates, data wider than the one column, updates not many per element.
    assert _strategy.plan((65536,), (400_000,), 0, 4, 2).strategy == Strategy.COLUMNS
    assert _strategy.plan((65536, 2), (4194304, 1), 0, 4, 2).strategy == Strategy.COLUMNS
    assert _strategy.plan((1 << 20,), (1 << 20,), 0, 4, 2).strategy == Strategy.COLUMNS
    # Waves of equal length, none longer than BINNED_WAVE_ROWS.
    assert _strategy.wave_rows((1 << 20) + 1) == (1 << 19) + 1
    assert _strategy.plan((1, 3000), (1, 1 << 19), 1, 8, 2) == Plan(Strategy.BINNED, 2, 1 << 19)


def test_reference_agrees_on_a_plain_histogram(binned: list[tuple[str, int]]) -> None:
    """Whole numbers: any order gives these sums, so a wrong element shows, not a wrong order."""
    rng = np.random.default_rng(7)
    indices = rng.integers(0, 33, size=2500)
    data = np.zeros(33, dtype=np.float32)
    updates = np.ones(2500, dtype=np.float32)
    got = scatterx.scatter_elements(data, indices, updates, reduction="add", backend="numba")
    want = reference_scatter_elements(data, indices, updates, reduction="add")
    assert_bitwise_equal(got, want)
    assert_bitwise_equal(got, np.bincount(indices, minlength=33).astype(np.float32))
