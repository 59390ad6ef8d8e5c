"""scatter_nd and gather_nd on the numba backend: the numpy backend's bits for every rank,
depth, reduction and dtype, with duplicates and negative indices; out= and in place; the
first bad index; the whole-row path reading one index per row; automatic choice."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx.backend import row_positions
from scatterx.testing import first_difference
from scatterx_numba import SMALL_CALL_UPDATES, _run
from scatterx_numba.plan import launch as _launch

numba = pytest.importorskip("numba", reason="numba is not installed (the numba extra)")

Array = np.ndarray[Any, Any]
REDUCTIONS = ("none", "add", "mul", "max", "min")
DTYPES = ("float32", "float64", "int64", "bool")
#: (data shape, depth): ranks 1 to 4, every depth.
CASES = [
    (shape, depth)
    for shape in ((23,), (11, 9), (7, 5, 6), (5, 4, 3, 6))
    for depth in range(1, len(shape) + 1)
]


@pytest.fixture
def two_threads() -> Iterator[None]:
    before = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    yield
    numba.set_num_threads(before)


def _values(dtype: np.dtype[Any], rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    """Values of ``dtype``: raw bool bytes (not only 0 and 1), small integers (mul stays
    small enough to compare), floats with -0.0 among them."""
    if dtype.kind == "b":
        return rng.integers(0, 256, shape).astype(np.uint8).view(bool)
    if dtype.kind in "iu":
        return rng.integers(-3, 4, shape).astype(dtype)
    values = rng.standard_normal(shape).astype(dtype)
    values.reshape(-1)[::7] = -0.0
    return values


def _rows(
    rng: np.random.Generator, shape: tuple[int, ...], depth: int, lead: tuple[int, ...]
) -> Array:
    """Index rows of ``depth`` columns, of every sign, many of them repeated."""
    n = math.prod(lead)
    distinct = max(1, n // 3)
    picked = np.stack([rng.integers(-size, size, distinct) for size in shape[:depth]], -1)
    return picked[rng.integers(0, distinct, n)].reshape(*lead, depth)


def _same(got: Array, want: Array) -> None:
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    got_bytes = np.ascontiguousarray(got).view(np.uint8)
    want_bytes = np.ascontiguousarray(want).view(np.uint8)
    assert np.array_equal(got_bytes, want_bytes), first_difference(got, want)


def _scatter_case(
    key: str, shape: tuple[int, ...], depth: int, lead: tuple[int, ...], seed: int
) -> tuple[Array, Array, Array]:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(key)
    indices = _rows(rng, shape, depth, lead)
    return _values(dtype, rng, shape), indices, _values(dtype, rng, lead + shape[depth:])


def _check_scatter(data: Array, indices: Array, updates: Array, reduction: str) -> Array:
    """The numba scatter (new array, into another out, in place), asserted to hold the
    numpy backend's bits."""
    want = scatterx.scatter_nd(data, indices, updates, reduction=reduction, backend="numpy")
    got = scatterx.scatter_nd(data, indices, updates, reduction=reduction, backend="numba")
    _same(got, want)
    out = np.empty_like(data)
    into = scatterx.scatter_nd(
        data, indices, updates, reduction=reduction, out=out, backend="numba"
    )
    assert into is out
    _same(out, want)
    in_place = data.copy()
    result = scatterx.scatter_nd(
        in_place, indices, updates, reduction=reduction, out=in_place, backend="numba"
    )
    assert result is in_place
    _same(in_place, want)
    return got


@pytest.mark.parametrize("key", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(("shape", "depth"), CASES)
def test_scatter_bits_equal_the_numpy_backend(
    shape: tuple[int, ...], depth: int, reduction: str, key: str, two_threads: None
) -> None:
    data, indices, updates = _scatter_case(key, shape, depth, (3, 7), len(shape) * 10 + depth)
    _check_scatter(data, indices, updates, reduction)


@pytest.mark.parametrize("key", DTYPES)
@pytest.mark.parametrize(("shape", "depth"), CASES)
def test_gather_bits_equal_the_numpy_backend(
    shape: tuple[int, ...], depth: int, key: str, two_threads: None
) -> None:
    rng = np.random.default_rng(depth)
    data = _values(np.dtype(key), rng, shape)
    indices = _rows(rng, shape, depth, (4, 5)).astype(np.int32)
    want = scatterx.gather_nd(data, indices, backend="numpy")
    _same(scatterx.gather_nd(data, indices, backend="numba"), want)
    out = np.empty_like(want)
    assert scatterx.gather_nd(data, indices, out=out, backend="numba") is out
    _same(out, want)


@pytest.mark.parametrize("batch_dims", [1, 2])
@pytest.mark.parametrize("key", DTYPES)
def test_gather_batch_dims(key: str, batch_dims: int, two_threads: None) -> None:
    rng = np.random.default_rng(batch_dims)
    shape = (3, 4, 5, 6, 7)
    data = _values(np.dtype(key), rng, shape)
    for depth in range(1, len(shape) - batch_dims + 1):
        lead = (*shape[:batch_dims], 5)
        rows = _rows(rng, shape[batch_dims:], depth, lead)
        want = scatterx.gather_nd(data, rows, batch_dims=batch_dims, backend="numpy")
        got = scatterx.gather_nd(data, rows, batch_dims=batch_dims, backend="numba")
        _same(got, want)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_whole_rows_read_one_index_per_row(
    reduction: str, two_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An embedding gradient (rows of 16 elements) runs the whole-row strategy on the
    index rows' positions: no index array of the updates' shape is made."""
    data, indices, updates = _scatter_case("float32", (300, 4, 4), 1, (2000,), 1)
    strategies = []
    real_plan = _launch.launch_plan

    def spy(*args: Any, **kwargs: Any) -> Any:
        plan = real_plan(*args, **kwargs)
        strategies.append(plan.strategy.strategy.name)
        return plan

    real_input = _run.kernel_input

    def refuse(array: Array, *args: Any) -> Any:
        if array.dtype.kind == "i":  # updates are float32
            msg = "the index rows were made into an array of updates' shape"
            raise AssertionError(msg)
        return real_input(array, *args)

    monkeypatch.setattr(_run._launch, "launch_plan", spy)
    monkeypatch.setattr(_run, "kernel_input", refuse)
    # numpy's answer first, then the checks of _check_scatter on the numba backend
    _check_scatter(data, indices, updates, reduction)
    assert strategies
    assert strategies[-1] == "ROWS"


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_other_strategies(reduction: str, threads: int) -> None:
    """Column tasks on the broadcast indices made whole (one thread; long slices), and
    one-element slices (a one-column scatter: segments on two threads)."""
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        for shape, depth, lead in (
            ((40, 30), 1, (500,)),
            ((40, 30), 2, (2000,)),
            ((6, 3000), 1, (9,)),
        ):
            data, indices, updates = _scatter_case("float64", shape, depth, lead, 2)
            _check_scatter(data, indices, updates, reduction)
    finally:
        numba.set_num_threads(before)


def test_above_the_small_call_threshold_numba_runs(two_threads: None) -> None:
    n = SMALL_CALL_UPDATES // 16 + 1
    data, indices, updates = _scatter_case("float32", (1000, 16), 1, (n,), 3)
    decision = scatterx.explain_nd(data, indices, updates, reduction="add")
    assert decision.backend == "numba"
    _check_scatter(data, indices, updates, "add")
    assert scatterx.explain_nd(data, indices).backend == "numba"
    want = scatterx.gather_nd(data, indices, backend="numpy")
    _same(scatterx.gather_nd(data, indices), want)
    small = scatterx.explain_nd(data, indices[:10], updates[:10], reduction="add")
    assert small.backend == "numpy"
    assert "numpy is faster" in (small.reasons["numba"] or "")
    assert "numpy is faster" in (scatterx.explain_nd(data, indices[:10]).reasons["numba"] or "")


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_layouts(reduction: str, two_threads: None) -> None:
    """Fortran-ordered and strided data (viewed as rows where it can be, copied where not),
    a strided ``out``, and in place on data that cannot be viewed as rows."""
    base, idx, _ = _scatter_case("float32", (30, 8, 6), 1, (50,), 4)
    rng = np.random.default_rng(4)
    for data in (np.asfortranarray(base), base[:, ::2], base.transpose(0, 2, 1)):
        upd = _values(data.dtype, rng, idx.shape[:1] + data.shape[1:])
        want = scatterx.scatter_nd(data, idx, upd, reduction=reduction, backend="numpy")
        _same(scatterx.scatter_nd(data, idx, upd, reduction=reduction, backend="numba"), want)
        in_place = data.copy(order="K")
        got = scatterx.scatter_nd(
            in_place, idx, upd, reduction=reduction, out=in_place, backend="numba"
        )
        assert got is in_place
        _same(in_place, want)
        out = np.zeros((*data.shape[:1], 2 * data.shape[1], *data.shape[2:]), data.dtype)
        strided = out[:, ::2]
        got = scatterx.scatter_nd(data, idx, upd, reduction=reduction, out=strided, backend="numba")
        assert got is strided
        _same(strided, want)
        gathered = scatterx.gather_nd(data, idx, backend="numba")
        _same(gathered, scatterx.gather_nd(data, idx, backend="numpy"))


def test_empty_calls(two_threads: None) -> None:
    data = np.arange(24.0).reshape(4, 6)
    none = np.zeros((0, 1), np.int64)
    _same(
        scatterx.scatter_nd(data, none, np.zeros((0, 6)), backend="numba"),
        scatterx.scatter_nd(data, none, np.zeros((0, 6)), backend="numpy"),
    )
    _same(scatterx.gather_nd(data, none, backend="numba"), np.zeros((0, 6)))
    flat = np.zeros((4, 0))
    rows = np.array([[1], [-1]])
    _same(
        scatterx.scatter_nd(flat, rows, np.zeros((2, 0)), backend="numba"),
        scatterx.scatter_nd(flat, rows, np.zeros((2, 0)), backend="numpy"),
    )


def _error(call: Any) -> str:
    with pytest.raises(IndexError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("value", [5, -6, 99])
@pytest.mark.parametrize("column", [0, 1, 2])
def test_index_errors_as_the_numpy_backend(value: int, column: int, two_threads: None) -> None:
    """The first bad index in C order, its message the numpy backend's; ``out`` and data in
    place untouched."""
    shape = (5, 4, 3, 16)
    bound = shape[column]
    bad = value if value != 5 else bound
    data, indices, updates = _scatter_case("float64", shape, 3, (40,), 5)
    indices = indices.copy()
    indices[17, column] = bad
    indices[30, 0] = 7  # a later bad index: not the one reported
    for backend in ("numpy", "numba"):
        messages = []
        out = data.copy()
        messages.append(
            _error(
                lambda b=backend, o=out: scatterx.scatter_nd(
                    data, indices, updates, out=o, backend=b
                )
            )
        )
        assert np.array_equal(out, data)
        in_place = data.copy()
        messages.append(
            _error(
                lambda b=backend, d=in_place: scatterx.scatter_nd(
                    d, indices, updates, reduction="add", out=d, backend=b
                )
            )
        )
        assert np.array_equal(in_place, data)
        messages.append(_error(lambda b=backend: scatterx.gather_nd(data, indices, backend=b)))
        if backend == "numpy":
            expected = messages
        else:
            assert messages == expected
    assert f"{bad}" in expected[0]


def test_gather_batch_index_error(two_threads: None) -> None:
    data = np.arange(60.0).reshape(3, 4, 5)
    rows = np.array([[[1], [2]], [[3], [-5]], [[0], [0]]])
    messages = [
        _error(lambda b=b: scatterx.gather_nd(data, rows, batch_dims=1, backend=b))
        for b in ("numpy", "numba")
    ]
    assert messages[0] == messages[1]


def test_row_positions() -> None:
    indices = np.array([[[1, -1], [0, 2]], [[-3, 0], [2, -3]]], np.int32)
    positions = row_positions(indices, (3, 3))  # the shared translation numba runs
    assert positions.dtype == np.int64
    assert positions.tolist() == [[5, 2], [0, 6]]
    assert indices.tolist()[0][0] == [1, -1]  # untouched
