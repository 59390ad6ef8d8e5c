"""The numba backend's two-pass strategies (rows, segments) and its fused copy, forced."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx.testing import (
    assert_bitwise_equal,
    reference_scatter_elements,
    reference_with_free_nans,
)
from scatterx_numba import _runtime, backend
from scatterx_numba._views import Strategy
from scatterx_numba.plan import strategy as _strategy
from scatterx_numba.plan.strategy import Plan

numba = pytest.importorskip("numba", reason="numba is not installed (the numba extra)")

Array = np.ndarray[Any, Any]
REDUCTIONS = ("none", "add", "mul", "max", "min")
PAIRS = [
    (dtype, reduction)
    for dtype in sorted(backend.capabilities)
    for reduction in REDUCTIONS
    if reduction in backend.capabilities[dtype]
]
REGROUPABLE = [
    (dtype, reduction)
    for dtype, reduction in PAIRS
    if reduction in ("none", "max", "min") or not dtype.startswith(("float", "bfloat", "complex"))
]
#: Each pair of a dtype and a reduction compiles a signature of the strategy's kernel
#: (seconds each on a cold cache). These dtypes run every reduction by default: the
#: conformance matrix's strategy rows (its embedding and histogram cases, same dtypes)
#: compile the same signatures of both strategies.
SHARED_DTYPES = ("bool", "int32", "float32")
#: One dtype of each other way the kernels store and fold values (float16 and bfloat16
#: through float32, complex), each with an arithmetic reduction, and ``none`` on each
#: width the shared dtypes leave out (2 and 8 bytes). The other pairs run the same code
#: in signatures of their own: marked slow (``python -m pytest -m slow``; CI runs them).
ROWS_COVER = {
    ("float16", "none"),
    ("float16", "add"),
    ("bfloat16", "mul"),
    ("complex64", "none"),
    ("complex64", "mul"),
}
SEGMENTS_COVER = {
    ("float16", "none"),
    ("float16", "max"),
    ("bfloat16", "min"),
    ("complex64", "none"),
}


def _by_cost(pairs: list[tuple[str, str]], cover: set[tuple[str, str]]) -> list[Any]:
    return [
        pytest.param(
            *pair, marks=() if pair[0] in SHARED_DTYPES or pair in cover else pytest.mark.slow
        )
        for pair in pairs
    ]


@pytest.fixture
def kernels_used(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The strategies whose kernels the calls of a test launched, with two numba threads."""
    used: list[str] = []
    choose = _runtime.kernel

    def spy(strategy: int, family: str, reduction: str) -> Any:
        used.append(Strategy(strategy).name.lower())
        return choose(strategy, family, reduction)

    monkeypatch.setattr(_runtime, "kernel", spy)
    before = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    yield used
    numba.set_num_threads(before)


def _dtype(name: str) -> np.dtype[Any]:
    if name == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _values(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> Array:
    """Small values with duplicates; floats also get NaN, infinities and both zeros."""
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    values = rng.integers(-3, 4, size=shape)
    if dtype.startswith(("float", "bfloat", "complex")):
        special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5])
        floats = np.where(rng.random(shape) < 0.2, rng.choice(special, shape), values)
        return floats.astype(_dtype(dtype))
    return values.astype(dtype)


def _check(data: Array, indices: Array, updates: Array, reduction: str) -> None:
    got = scatterx.scatter_elements(data, indices, updates, reduction=reduction, backend="numba")
    want, free_nans = reference_with_free_nans(data, indices, updates, reduction=reduction)
    # As the conformance suite: any NaN payload only where two NaNs met (contract section 2).
    assert_bitwise_equal(got, want, any_nan=free_nans)


@pytest.mark.parametrize(("dtype", "reduction"), _by_cost(PAIRS, ROWS_COVER))
def test_rows_strategy_matches_oracle(kernels_used: list[str], dtype: str, reduction: str) -> None:
    rng = np.random.default_rng(1)
    indices = np.repeat(rng.integers(-40, 40, size=(300, 1)), 64, axis=1)
    data = _values(dtype, (40, 64), rng)
    _check(data, indices, _values(dtype, indices.shape, rng), reduction)
    assert kernels_used == ["rows"]


@pytest.mark.parametrize(("dtype", "reduction"), _by_cost(REGROUPABLE, SEGMENTS_COVER))
@pytest.mark.parametrize("shape", [(37,), (37, 2)])
def test_segments_strategy_matches_oracle(
    kernels_used: list[str], dtype: str, reduction: str, shape: tuple[int, ...]
) -> None:
    rng = np.random.default_rng(2)
    indices = rng.integers(-37, 37, size=(3000, *shape[1:]))
    data = _values(dtype, shape, rng)
    _check(data, indices, _values(dtype, indices.shape, rng), reduction)
    assert kernels_used == ["segments"]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "complex64"])
@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_float_arithmetic_never_takes_segments(
    kernels_used: list[str], dtype: str, reduction: str
) -> None:
    rng = np.random.default_rng(3)
    indices = rng.integers(0, 37, size=3000)
    _check(_values(dtype, (37,), rng), indices, _values(dtype, (3000,), rng), reduction)
    assert kernels_used == ["columns"]


def test_plan_picks_the_two_pass_strategies() -> None:
    histogram = ((65536,), (4194304,), 0, 4, 2)
    assert _strategy.plan(*histogram, regroupable=True) == Plan(Strategy.SEGMENTS, 2, 1)
    assert _strategy.plan(*histogram, regroupable=False).strategy == Strategy.BINNED
    embedding = ((30000, 256), (16384, 256), 0, 4, 2)
    assert _strategy.plan(*embedding, constant_rows=True) == Plan(Strategy.ROWS, 2, 256)
    assert _strategy.plan(*embedding, constant_rows=False).strategy == Strategy.COLUMNS
    # One thread, or rows too short to pay for every task scanning every row: columns.
    assert _strategy.plan((30000, 256), (16384, 256), 0, 4, 1, constant_rows=True).band == 256
    assert (
        _strategy.plan((300, 4), (1000, 4), 0, 4, 2, constant_rows=True).strategy
        == Strategy.COLUMNS
    )


@pytest.mark.parametrize("strategy", ["rows", "segments", "last"])
def test_first_bad_index_and_no_partial_result(kernels_used: list[str], strategy: str) -> None:
    rng = np.random.default_rng(4)
    reduction = "none" if strategy == "last" else "max"
    if strategy == "rows":
        indices = np.repeat(rng.integers(0, 40, size=(300, 1)), 64, axis=1)
        indices[250], indices[120] = 40, -41  # two bad rows, in the second task and the first
        first, position = -41, (120, 0)
    else:
        indices = rng.integers(0, 40, size=(3000, 2))
        # A bad index in each task's segment (the first ends at row 1500).
        indices[2500, 0], indices[1200, 1], indices[1200, 0] = 99, 40, -41
        first, position = -41, (1200, 0)
    data = np.zeros((40, indices.shape[1]), dtype=np.float32)
    updates = np.ones(indices.shape, dtype=np.float32)
    with pytest.raises(IndexError) as info:
        scatterx.scatter_elements(data, indices, updates, reduction=reduction, backend="numba")
    assert str(info.value) == str(scatterx.backend.out_of_bounds_error(first, position, 0, 40))
    assert not data.any()
    assert kernels_used[0] == ("rows" if strategy == "rows" else "segments")


def test_rows_that_turn_out_mixed_leave_out_untouched_in_place(
    kernels_used: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In place, whole rows check their indices before writing; a row that is not
    constant sends the call to columns, which write as they go: the indices are checked
    before them, and a bad one past the mixed row leaves ``out`` as it was. (Data this
    small beside its indices would be staged as a new result: not here.)"""
    from scatterx_numba import _run

    monkeypatch.setattr(_run, "STAGE_FRACTION", 0.0)
    rng = np.random.default_rng(6)
    indices = np.repeat(rng.integers(0, 40, size=(300, 1)), 64, axis=1)
    indices[100, 7] = (indices[100, 0] + 1) % 40  # mixed: whole rows give way to columns
    indices[250] = 40
    data = np.zeros((40, 64), dtype=np.float32)
    updates = np.ones(indices.shape, dtype=np.float32)
    with pytest.raises(IndexError) as info:
        scatterx.scatter_elements(
            data, indices, updates, reduction="max", out=data, backend="numba"
        )
    assert str(info.value) == str(scatterx.backend.out_of_bounds_error(40, (250, 0), 0, 40))
    assert not data.any()
    assert kernels_used == ["rows"]  # the check raised before the columns kernel


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    ("data_shape", "index_shape", "axis"),
    [((500, 300), (500, 7), 1), ((3, 40, 3000), (3, 40, 3000), 1), ((2, 600), (9, 600), 0)],
)
def test_columns_with_the_copy_in_the_tasks(
    kernels_used: list[str],
    reduction: str,
    data_shape: tuple[int, ...],
    index_shape: tuple[int, ...],
    axis: int,
) -> None:
    rng = np.random.default_rng(5)
    data = rng.standard_normal(data_shape)
    indices = rng.integers(-data_shape[axis], data_shape[axis], size=index_shape)
    updates = rng.standard_normal(index_shape)
    got = scatterx.scatter_elements(
        data, indices, updates, axis=axis, reduction=reduction, backend="numba"
    )
    want = reference_scatter_elements(data, indices, updates, axis=axis, reduction=reduction)
    assert_bitwise_equal(got, want)
    assert kernels_used == ["columns"]
