"""The numba backend: strategies, bounds errors, layouts, dtypes, selection, lazy import."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import scatterx
from _subprocess import run_python
from scatterx.testing import assert_bitwise_equal, reference_scatter_elements
from scatterx_numba import backend
from scatterx_numba._views import Strategy
from scatterx_numba.plan import launch as _launch
from scatterx_numba.plan import strategy as _strategy
from scatterx_numba.plan.strategy import Plan

numba = pytest.importorskip("numba", reason="numba is not installed (the numba extra)")

Array = np.ndarray[Any, Any]
Shapes = tuple[tuple[int, ...], tuple[int, ...]]  # data, indices
REDUCTIONS = ("none", "add", "mul", "max", "min")


def _check(data: Array, indices: Array, updates: Array, axis: int, reduction: str) -> None:
    got = scatterx.scatter_elements(
        data, indices, updates, axis=axis, reduction=reduction, backend="numba"
    )
    want = reference_scatter_elements(data, indices, updates, axis=axis, reduction=reduction)
    assert_bitwise_equal(got, want)


@pytest.fixture
def owners_on_few_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Owners on any number of threads (plans are cached: made again for this)."""
    monkeypatch.setattr(_strategy, "OWNER_MIN_THREADS", 1)
    _launch.cache_clear()
    yield
    _launch.cache_clear()


@pytest.fixture
def two_threads() -> Any:
    before = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    yield
    numba.set_num_threads(before)


def test_import_does_not_load_numba() -> None:
    code = (
        "import sys, scatterx, scatterx_numba; scatterx.backends(); print('numba' in sys.modules)"
    )
    assert run_python(code).strip() == "False"


def test_available_says_why_without_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from scatterx_numba import NumbaBackend

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    reason = NumbaBackend().available()
    assert reason is not None
    assert "numba is not installed" in reason


def test_capabilities_decline_strings() -> None:
    assert "StringDType" not in backend.capabilities
    assert backend.capabilities["complex64"] == frozenset({"none", "add", "mul"})
    request = scatterx.explain(np.array(["a", "b"]), np.array([0]), np.array(["c"]))
    assert request.reasons["numba"] == "dtype str_ is not served"


@pytest.mark.parametrize(
    ("shapes", "axis", "threads", "expected"),
    [
        (((4096, 4096), (4096, 4096)), 0, 2, Plan(Strategy.COLUMNS, 8, 512)),
        (((30000, 256), (16384, 256)), 0, 2, Plan(Strategy.COLUMNS, 1, 256)),
        (((8192, 1024), (8192, 64)), 1, 2, Plan(Strategy.COLUMNS, 8192, 1)),
        (((65536,), (4194304,)), 0, 2, Plan(Strategy.BINNED, 2, 1 << 20)),
        (((65536,), (4194304,)), 0, 4, Plan(Strategy.OWNERS, 4, 1)),
        (((65536,), (1000,)), 0, 4, Plan(Strategy.COLUMNS, 1, 1)),
        (((64, 8, 3), (50, 8, 3)), 0, 2, Plan(Strategy.COLUMNS, 1, 24)),
    ],
)
def test_strategy_from_shapes(shapes: Shapes, axis: int, threads: int, expected: Plan) -> None:
    data_shape, index_shape = shapes
    assert _strategy.plan(data_shape, index_shape, axis, 4, threads) == expected


def _histogram(dtype: str, seed: int) -> tuple[Array, Array, Array]:
    rng = np.random.default_rng(seed)
    data = rng.integers(-3, 4, size=(37, 2)).astype(dtype)
    indices = rng.integers(-37, 37, size=(3000, 2))
    updates = rng.integers(-3, 4, size=(3000, 2)).astype(dtype)
    return data, indices, updates


OWNER_CASES = [
    (dtype, reduction)
    for dtype in ("float32", "int16", "bool", "float16", "complex64")
    for reduction in REDUCTIONS
    if reduction in backend.capabilities[dtype]
]
#: Each dtype and each reduction of OWNER_CASES at least once, float arithmetic (what
#: owners exist for) on each float family: six signatures of the owners kernel, one of
#: them (u64 ``none``) shared with test_first_bad_index_in_c_order. Each other pair
#: compiles a signature of its own (seconds each) for code these run: marked slow.
OWNER_COVER = {
    ("float32", "add"),
    ("float16", "mul"),
    ("complex64", "add"),
    ("complex64", "none"),
    ("int16", "max"),
    ("bool", "min"),
}


@pytest.mark.parametrize(
    ("dtype", "reduction"),
    [
        pytest.param(*pair, marks=() if pair in OWNER_COVER else pytest.mark.slow)
        for pair in OWNER_CASES
    ],
)
def test_owner_strategy_matches_oracle(
    owners_on_few_threads: None, two_threads: None, dtype: str, reduction: str
) -> None:
    data, indices, updates = _histogram(dtype, 7)
    assert _strategy.plan(data.shape, indices.shape, 0, 4, 2).strategy == Strategy.OWNERS
    _check(data, indices, updates, 0, reduction)


@pytest.mark.parametrize("owners", [False, True])
def test_first_bad_index_in_c_order(
    request: pytest.FixtureRequest, two_threads: None, owners: bool
) -> None:
    if owners:
        request.getfixturevalue("owners_on_few_threads")
    rng = np.random.default_rng(3)
    data = np.zeros((40, 64), dtype=np.float64)
    indices = rng.integers(-40, 40, size=(300, 64)) if owners else rng.integers(0, 40, (30, 64))
    # Bad indices in several tasks; the first in C order is not the first of any one band.
    indices[17, 60], indices[17, 3], indices[25, 1] = 41, -41, 99
    updates = np.ones(indices.shape)
    expected = scatterx.backend.out_of_bounds_error(-41, (17, 3), 0, 40)
    with pytest.raises(IndexError) as info:
        scatterx.scatter_elements(data, indices, updates, backend="numba")
    assert str(info.value) == str(expected)
    assert not data.any()


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_columns_in_place_check_every_index_in_their_kernel(
    monkeypatch: pytest.MonkeyPatch, two_threads: None, index_dtype: str
) -> None:
    """In place, the columns kernel checks every index in a first pass of its own, with no
    bounds launch before it: a bad index leaves ``out`` as it was, the error names the
    first in C order, and good indices (negative ones too) give the oracle's bits."""
    from scatterx_numba import _runtime

    launched: list[Any] = []
    launch = _runtime.launch
    monkeypatch.setattr(_runtime, "launch", lambda k, *a: launched.append(k) or launch(k, *a))
    rng = np.random.default_rng(8)
    data = rng.standard_normal((600, 50)).astype(np.float32)
    indices = rng.integers(-50, 50, (600, 9)).astype(index_dtype)
    updates = rng.standard_normal(indices.shape).astype(np.float32)
    want = reference_scatter_elements(data, indices, updates, axis=1, reduction="add")
    bad = indices.copy()
    bad[450, 2], bad[301, 8], bad[599, 0] = 50, -51, 77  # in several tasks' shares
    out = data.copy()
    with pytest.raises(IndexError) as info:
        scatterx.scatter_elements(
            out, bad, updates, axis=1, reduction="add", out=out, backend="numba"
        )
    assert str(info.value) == str(scatterx.backend.out_of_bounds_error(-51, (301, 8), 1, 50))
    assert_bitwise_equal(out, data)
    scatterx.scatter_elements(
        out, indices, updates, axis=1, reduction="add", out=out, backend="numba"
    )
    assert_bitwise_equal(out, want)
    assert _runtime.pass_kernel("index_range") not in launched


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("bad_at", "first"),
    [
        # In both check shares: the first in C order is in the first share, whose task
        # may finish after the other's.
        ({(2900, 5): 40, (1200, 3): -41, (1200, 29): 99}, (1200, 3)),
        ({(2999, 29): 40}, (2999, 29)),  # the last index, in the last share only
        ({(0, 0): -41}, (0, 0)),
    ],
)
def test_columns_in_place_check_claimed_shares(
    threads: int, bad_at: dict[tuple[int, int], int], first: tuple[int, int]
) -> None:
    """The in-place columns kernel checks its indices in shares claimed by whichever task
    is free (``_claims``), in the region that writes: more indices than one share, on
    one thread and on two, leave ``out`` untouched on a bad index and name the first."""
    from scatterx_numba.kernels import scatter as _kernels

    rng = np.random.default_rng(11)
    indices = rng.integers(-40, 40, (3000, 30))
    assert indices.size > _kernels.CHECK_INDICES  # two shares
    assert _strategy.plan((3000, 40), indices.shape, 1, 4, threads).strategy == Strategy.COLUMNS
    data = rng.standard_normal((3000, 40)).astype(np.float32)
    updates = rng.standard_normal(indices.shape).astype(np.float32)
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        bad = indices.copy()
        for position, value in bad_at.items():
            bad[position] = value
        out = data.copy()
        with pytest.raises(IndexError) as info:
            scatterx.scatter_elements(
                out, bad, updates, axis=1, reduction="add", out=out, backend="numba"
            )
        expected = scatterx.backend.out_of_bounds_error(int(bad[first]), first, 1, 40)
        assert str(info.value) == str(expected)
        assert_bitwise_equal(out, data)
        want = reference_scatter_elements(data, indices, updates, axis=1, reduction="add")
        scatterx.scatter_elements(
            out, indices, updates, axis=1, reduction="add", out=out, backend="numba"
        )
        assert_bitwise_equal(out, want)
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_one_column_rows_prefetched_ahead_keep_the_oracle_bits(
    two_threads: None, reduction: str
) -> None:
    """One-column units prefetch the targets of rows ahead of the one they scatter, even
    where the indices are not checked yet (a new result copied before the kernel: indices
    shorter than data). The bits are the oracle's, in place and new, and an index far out
    of bounds, prefetched before it is met, is still the error."""
    rng = np.random.default_rng(11)
    data = rng.standard_normal((700, 40)).astype(np.float32)
    indices = rng.integers(-40, 40, (650, 12))
    updates = rng.standard_normal(indices.shape).astype(np.float32)
    _check(data, indices, updates, 1, reduction)
    full = rng.integers(-40, 40, (700, 12))
    out = data.copy()
    scatterx.scatter_elements(
        out,
        full,
        updates[:1].repeat(700, 0),
        axis=1,
        reduction=reduction,
        out=out,
        backend="numba",
    )
    want = reference_scatter_elements(
        data, full, updates[:1].repeat(700, 0), axis=1, reduction=reduction
    )
    assert_bitwise_equal(out, want)
    bad = indices.copy()
    bad[600, 3] = -(10**15)
    with pytest.raises(IndexError) as info:
        scatterx.scatter_elements(data, bad, updates, axis=1, reduction=reduction, backend="numba")
    assert str(info.value) == str(scatterx.backend.out_of_bounds_error(-(10**15), (600, 3), 1, 40))


def test_embedding_rows_with_a_bad_row(two_threads: None) -> None:
    tokens = np.array([[3], [-1], [7], [2]])
    indices = np.repeat(tokens, 256, axis=1)
    indices[2, 100] = 8  # one row breaks the constant-row fast path, in bounds
    indices[3, :] = -9
    # float32: the signature of the conformance matrix's embedding rows.
    data, updates = np.zeros((8, 256), np.float32), np.ones((4, 256), np.float32)
    with pytest.raises(IndexError) as info:
        scatterx.scatter_elements(data, indices, updates, backend="numba")
    assert str(info.value) == str(scatterx.backend.out_of_bounds_error(8, (2, 100), 0, 8))


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_embedding_fast_path_matches_oracle(two_threads: None, reduction: str) -> None:
    rng = np.random.default_rng(5)
    indices = np.repeat(rng.integers(-60, 60, size=(200, 1)), 96, axis=1)
    indices[::7, 5] = 0  # mixed rows take the per-element path
    data = rng.standard_normal((60, 96)).astype(np.float32)
    _check(data, indices, rng.standard_normal((200, 96)).astype(np.float32), 0, reduction)


def _layouts(array: Array) -> dict[str, Array]:
    readonly = array.copy()
    readonly.flags.writeable = False
    return {
        "fortran": np.asfortranarray(array),
        "strided": np.repeat(array, 2, axis=-1)[..., ::2],
        "readonly": readonly,
        "byteswapped": array.astype(array.dtype.newbyteorder()),
    }


@pytest.mark.parametrize("layout", ["fortran", "strided", "readonly", "byteswapped"])
@pytest.mark.parametrize("role", ["data", "indices", "updates"])
def test_layouts(role: str, layout: str) -> None:
    rng = np.random.default_rng(11)
    arrays = {
        "data": rng.standard_normal((12, 9)).astype(np.float32),
        "indices": rng.integers(-12, 12, size=(20, 7)).astype(np.int32),
        "updates": rng.standard_normal((20, 7)).astype(np.float32),
    }
    arrays[role] = _layouts(arrays[role])[layout]
    before = arrays[role].copy()
    _check(arrays["data"], arrays["indices"], arrays["updates"], 0, "add")
    np.testing.assert_array_equal(arrays[role], before)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_indices_shorter_than_data(axis: int) -> None:
    rng = np.random.default_rng(axis)
    data = rng.standard_normal((6, 7, 8))
    shape = [4, 5, 3]
    shape[axis] = 9
    indices = rng.integers(0, data.shape[axis], size=shape)
    _check(data, indices, rng.standard_normal(shape), axis, "add")


def test_thread_count_is_respected() -> None:
    from scatterx_numba import _runtime

    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        assert _runtime.num_threads() == 1
        data, indices, updates = _histogram("float64", 2)
        _check(data, indices, updates, 0, "add")
    finally:
        numba.set_num_threads(before)


def test_small_calls_go_to_numpy_in_automatic_choice() -> None:
    small = scatterx.explain(np.zeros(10), np.array([1, 2]), np.array([1.0, 2.0]))
    assert small.backend == "numpy"
    assert "numpy is faster" in (small.reasons["numba"] or "")
    n = backend_threshold()
    big = scatterx.explain(np.zeros(10), np.zeros(n, dtype=np.int64), np.ones(n))
    assert big.backend == "numba"


def backend_threshold() -> int:
    from scatterx_numba import SMALL_CALL_UPDATES

    return SMALL_CALL_UPDATES


def test_owner_strategy_with_several_outer_positions(
    owners_on_few_threads: None, two_threads: None
) -> None:
    rng = np.random.default_rng(5)
    data = rng.standard_normal((2, 29, 1)).astype(np.float32)
    indices = rng.integers(-29, 29, size=(2, 500, 1))
    updates = rng.standard_normal((2, 500, 1)).astype(np.float32)
    assert _strategy.plan(data.shape, indices.shape, 1, 4, 2).strategy == Strategy.OWNERS
    _check(data, indices, updates, 1, "add")


# Owners on 16 threads: the scratch must stay near one output, not one per thread.
OWNER_MEMORY_SCRIPT = """
import tracemalloc, numpy as np, scatterx
from scatterx_numba import _views
from scatterx_numba.plan import strategy as _strategy
rng = np.random.default_rng(0)
data = rng.standard_normal(1 << 20).astype(np.float32)
indices = rng.integers(0, data.size, 2 * data.size)
updates = rng.standard_normal(indices.size).astype(np.float32)
assert _strategy.plan(data.shape, indices.shape, 0, 4, 16).strategy == _views.Strategy.OWNERS
call = lambda: scatterx.scatter_elements(data, indices, updates, reduction="add", backend="numba")
call()  # compiles first: the compiler's own allocations do not count
tracemalloc.start()
call()
print(tracemalloc.get_traced_memory()[1] / data.nbytes)
"""


def test_owner_strategy_memory_is_bounded_by_the_output() -> None:
    peak = float(run_python(OWNER_MEMORY_SCRIPT, env={"NUMBA_NUM_THREADS": "16"}))
    # The output, the owners' rows and the kernel's small arrays: 16 copies were 17x.
    assert peak < 2.5


def test_only_small_position_maps_are_kept() -> None:
    """A call whose indices are long off the axis makes its maps afresh; small ones are kept."""
    from scatterx_numba import _views

    small = (np.zeros((4, 8), np.float32), np.zeros((2, 8), np.int64), np.ones((2, 8), np.float32))
    wide = _views._KEPT_MAP + 1
    large = (
        np.zeros((2, wide), np.float32),
        np.zeros((1, wide), np.int64),
        np.ones((1, wide), np.float32),
    )
    _views._kept_maps.cache_clear()
    for data, indices, updates in (small, large):
        out = scatterx.scatter_elements(data, indices, updates, reduction="add", backend="numba")
        expected = scatterx.scatter_elements(
            data, indices, updates, reduction="add", backend="numpy"
        )
        assert np.array_equal(out, expected)
    kept = _views._kept_maps.cache_info().currsize
    assert kept == 1, kept
