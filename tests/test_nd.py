"""scatter_nd and gather_nd on NumPy arrays against the loop oracles: every rank, depth
and index rank, negative and repeated rows under every reduction, every dtype family,
empty indices and 0-d updates, batch_dims, layouts; the shape, type and bounds errors;
out= and in place; explain_nd. (onnxruntime and other libraries: test_nd_libraries.py.)"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

import scatterx
from _nd_arrays import rows as rows_of
from _nd_arrays import values
from scatterx.testing import assert_bitwise_equal, reference_gather_nd, reference_scatter_nd

Array = np.ndarray[Any, Any]
Shape = tuple[int, ...]

#: The dtypes of the generated cases; a string dtype besides NumPy's numbers.
DTYPES = [
    "float16",
    "float32",
    "float64",
    "int8",
    "int32",
    "int64",
    "uint8",
    "bool",
    "complex64",
    "object",
    *(["StringDType"] if hasattr(np.dtypes, "StringDType") else []),
]
#: Every valid (dtype, reduction) pair of DTYPES.
PAIRS = [
    (key, reduction)
    for key in DTYPES
    for reduction in scatterx.REDUCTIONS
    if reduction in scatterx.DTYPE_REDUCTIONS[key]
]
#: Data shapes of ranks 1 to 4, with each depth k.
SHAPES: list[Shape] = [(7,), (5, 4), (4, 3, 5), (3, 2, 3, 4)]
#: indices.shape[:-1]: index ranks 1 (one row: 0-d updates when k == data.ndim) to 3,
#: and empty indices.
LEADS: list[Shape] = [(), (6,), (3, 4), (0,), (2, 0)]


def _scatter_cases(key: str, reduction: str, seed: int) -> list[tuple[Array, Array, Array]]:
    """(data, indices, updates) for every shape, depth and lead."""
    rng = np.random.default_rng(seed)
    cases = []
    for shape in SHAPES:
        for depth in range(1, len(shape) + 1):
            for lead in LEADS:
                data = values(key, rng, shape, nans=True)
                rows = rows_of(rng, shape[:depth], lead)  # lead (), depth == rank: 0-d updates
                # Two NaNs meeting in add or mul give a NaN of any payload: none in updates.
                nans = reduction in ("none", "max", "min")
                updates = values(key, rng, rows.shape[:-1] + shape[depth:], nans)
                cases.append((data, rows, updates))
    return cases


@pytest.mark.parametrize(("key", "reduction"), PAIRS, ids=[f"{k}-{r}" for k, r in PAIRS])
def test_scatter_nd_equals_the_oracle(key: str, reduction: str) -> None:
    for data, indices, updates in _scatter_cases(key, reduction, len(key) + len(reduction)):
        before = data.copy()
        got = scatterx.scatter_nd(data, indices, updates, reduction=reduction)
        want = reference_scatter_nd(data, indices, updates, reduction)
        where = f"data {data.shape}, indices {indices.shape}"
        assert got.shape == data.shape, where
        assert got is not data
        try:
            assert_bitwise_equal(got, want)
            assert_bitwise_equal(data, before)
        except AssertionError as exc:
            msg = f"{where}: {exc}"
            raise AssertionError(msg) from None


def test_the_oracles_agree_with_numpy_indexing() -> None:
    rng = np.random.default_rng(1)
    data = rng.integers(-9, 9, (4, 3, 5))
    rows = rows_of(rng, (4, 3), (5, 2))
    columns = tuple(np.moveaxis(rows, -1, 0))
    assert_bitwise_equal(reference_gather_nd(data, rows), data[columns])
    updates = rng.integers(-9, 9, (5, 2, 5))
    added = data.copy()
    np.add.at(added, columns, updates)
    assert_bitwise_equal(reference_scatter_nd(data, rows, updates, "add"), added)
    batch_rows = rows_of(rng, (3,), (4, 6))
    picked = data[np.arange(4)[:, None], batch_rows[..., 0]]
    assert_bitwise_equal(reference_gather_nd(data, batch_rows, 1), picked)


def test_rows_hitting_one_slice_apply_in_c_order() -> None:
    data = np.zeros((2, 3))
    rows = np.array([[[1], [0]], [[-1], [1]]])
    updates = np.arange(12.0).reshape(2, 2, 3) + 1
    got = scatterx.scatter_nd(data, rows, updates)
    assert_bitwise_equal(got, np.array([[4.0, 5.0, 6.0], [10.0, 11.0, 12.0]]))
    assert_bitwise_equal(got, reference_scatter_nd(data, rows, updates))
    data = np.array([np.nan, 1.0])
    rows = np.array([[1], [1], [0], [0]])
    updates = np.array([np.nan, 2.0, 3.0, -0.0])
    assert_bitwise_equal(
        scatterx.scatter_nd(data, rows, updates, reduction="max"),
        np.array([np.nan, np.nan]),
    )
    zeros = np.array([0.0, -0.0])
    got = scatterx.scatter_nd(zeros, np.array([[0], [1]]), -zeros, reduction="min")
    assert_bitwise_equal(got, np.minimum(zeros, -zeros))


@pytest.mark.parametrize("batch_dims", [0, 1, 2])
@pytest.mark.parametrize("key", DTYPES)
def test_gather_nd_equals_the_oracle(key: str, batch_dims: int) -> None:
    rng = np.random.default_rng(batch_dims + len(key))
    for shape in SHAPES[batch_dims:]:
        data = values(key, rng, shape, nans=True)
        for depth in range(1, len(shape) - batch_dims + 1):
            for lead in LEADS:
                sizes = shape[batch_dims : batch_dims + depth]
                rows = rows_of(rng, sizes, shape[:batch_dims] + lead)
                got = scatterx.gather_nd(data, rows, batch_dims=batch_dims)
                want = reference_gather_nd(data, rows, batch_dims)
                assert got.shape == rows.shape[:-1] + shape[batch_dims + depth :]
                try:
                    assert_bitwise_equal(got, want)
                except AssertionError as exc:
                    where = f"data {shape}, indices {rows.shape}, batch_dims={batch_dims}"
                    msg = f"{where}: {exc}"
                    raise AssertionError(msg) from None


def test_int32_indices_and_byte_swapped_data() -> None:
    rng = np.random.default_rng(3)
    data = rng.standard_normal((4, 5)).astype(">f8")
    rows = rows_of(rng, (4,), (6,)).astype(np.int32)
    updates = rng.standard_normal((6, 5)).astype(">f8")
    got = scatterx.scatter_nd(data, rows, updates, reduction="add")
    assert got.dtype == data.dtype
    assert_bitwise_equal(got, reference_scatter_nd(data, rows, updates, "add"))
    assert_bitwise_equal(scatterx.gather_nd(data, rows), reference_gather_nd(data, rows))


@pytest.mark.parametrize("reduction", scatterx.REDUCTIONS)
def test_strided_and_fortran_layouts(reduction: str) -> None:
    rng = np.random.default_rng(8)
    data = rng.standard_normal((5, 4, 3)).transpose(2, 0, 1)  # (3, 5, 4), no C order
    rows = np.asfortranarray(rows_of(rng, (5, 3), (2, 2)))[..., ::-1]
    updates = rng.standard_normal((4, 2, 8))[::2, :, ::2]
    want = reference_scatter_nd(data, rows, updates, reduction)
    assert_bitwise_equal(scatterx.scatter_nd(data, rows, updates, reduction=reduction), want)
    out = np.empty((4, 5, 3)).transpose(2, 1, 0)
    scatterx.scatter_nd(data, rows, updates, reduction=reduction, out=out)
    assert_bitwise_equal(out, want)
    in_place = np.asfortranarray(data)
    scatterx.scatter_nd(in_place, rows, updates, reduction=reduction, out=in_place)
    assert_bitwise_equal(in_place, want)
    gathered = np.empty((4, 2, 2)).transpose(2, 1, 0)
    assert scatterx.gather_nd(data, rows, out=gathered) is gathered
    assert_bitwise_equal(gathered, reference_gather_nd(data, rows))


# Errors, before anything is written.

I64 = np.int64
SCATTER_SHAPE_ERRORS = [
    ((), (1, 1), (), "data must have at least one dimension"),
    ((3,), (), (), "indices must have at least one dimension"),
    ((3,), (2, 0), (2, 3), "the last dimension of indices (the index columns, 0) must be"),
    ((3, 2), (2, 3), (2,), "must be from 1 to the rank of data, 2"),
    ((3, 2), (2, 1), (2, 3), "updates must have the shape indices.shape[:-1] + data.shape[1:]"),
    ((3, 2), (2, 2), (2, 1), "updates must have the shape"),
]


@pytest.mark.parametrize(("data", "indices", "updates", "message"), SCATTER_SHAPE_ERRORS)
def test_scatter_nd_shape_errors(data: Shape, indices: Shape, updates: Shape, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        scatterx.scatter_nd(np.zeros(data), np.zeros(indices, I64), np.zeros(updates))


GATHER_SHAPE_ERRORS = [
    ((), (1, 1), 0, "data must have at least one dimension"),
    ((3,), (), 0, "indices must have at least one dimension"),
    ((3, 2), (2, 3), 0, "must be from 1 to the rank of data less batch_dims, 2"),
    ((3, 2), (2, 1), 2, "batch_dims must be in [0, 1]"),
    ((3, 2), (2, 1), -1, "batch_dims must be in [0, 1]"),
    ((3, 2), (3,), 1, "batch_dims must be in [0, 0]"),
    ((3, 2), (2, 1), 1, "the first 1 dimensions (batch_dims) of indices and data must be equal"),
    ((3, 2), (3, 2), 1, "must be from 1 to the rank of data less batch_dims, 1"),
]


@pytest.mark.parametrize(("data", "indices", "batch_dims", "message"), GATHER_SHAPE_ERRORS)
def test_gather_nd_shape_errors(data: Shape, indices: Shape, batch_dims: int, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        scatterx.gather_nd(np.zeros(data), np.zeros(indices, I64), batch_dims=batch_dims)


@pytest.mark.parametrize("batch_dims", [True, np.bool_(False), 1.0, "1", None])
def test_batch_dims_must_be_an_int(batch_dims: Any) -> None:
    with pytest.raises(TypeError, match="batch_dims must be an int"):
        scatterx.gather_nd(np.zeros((3, 2)), np.zeros((3, 1), I64), batch_dims=batch_dims)


def test_batch_dims_may_be_a_numpy_integer() -> None:
    data, rows = np.arange(6.0).reshape(3, 2), np.array([[1], [0], [-1]])
    got = scatterx.gather_nd(data, rows, batch_dims=np.int64(1))
    assert_bitwise_equal(got, reference_gather_nd(data, rows, 1))


@pytest.mark.parametrize("index_dtype", [np.float64, np.int16, np.uint32])
def test_indices_must_be_int32_or_int64(index_dtype: Any) -> None:
    rows = np.zeros((2, 1), index_dtype)
    with pytest.raises(TypeError, match="indices must be int32 or int64"):
        scatterx.scatter_nd(np.zeros(3), rows, np.zeros(2))
    with pytest.raises(TypeError, match="indices must be int32 or int64"):
        scatterx.gather_nd(np.zeros(3), rows)


def test_updates_must_have_the_dtype_of_data() -> None:
    with pytest.raises(TypeError, match="updates must have the dtype of data"):
        scatterx.scatter_nd(np.zeros(3), np.zeros((2, 1), I64), np.zeros(2, np.float32))


def test_reduction_undefined_for_the_dtype() -> None:
    with pytest.raises(TypeError, match="complex numbers have no order"):
        scatterx.scatter_nd(
            np.zeros(3, complex), np.zeros((1, 1), I64), np.ones(1, complex), reduction="max"
        )


OUT_OF_RANGE = [  # data shape, indices, where, axis, size
    ((3, 2), [[1, 0], [1, -3]], (1, 1), 1, 2),
    ((3, 2), [[3], [-9]], (0, 0), 0, 3),
    ((4, 3, 2), [[[0, 2], [-5, 9]]], (0, 1, 0), 0, 4),
]


@pytest.mark.parametrize(("shape", "rows", "where", "axis", "size"), OUT_OF_RANGE)
def test_out_of_range_raises_before_writing(
    shape: Shape, rows: list[Any], where: Shape, axis: int, size: int
) -> None:
    indices = np.array(rows, I64)
    value = int(indices[where])
    message = f"index {value} at position {where} of indices is out of bounds"
    message += f" for axis {axis} with size {size}: "
    data = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    updates = np.ones(indices.shape[:-1] + shape[indices.shape[-1] :])
    for reduction in scatterx.REDUCTIONS:
        out, kept = np.full(shape, 7.0), data.copy()
        for target in (out, data):
            with pytest.raises(IndexError, match=re.escape(message)):
                scatterx.scatter_nd(data, indices, updates, reduction=reduction, out=target)
        assert_bitwise_equal(out, np.full(shape, 7.0))
        assert_bitwise_equal(data, kept)
    with pytest.raises(IndexError, match=re.escape(message)):
        reference_scatter_nd(data, indices, updates)
    gathered = np.full(indices.shape[:-1] + shape[indices.shape[-1] :], 7.0)
    with pytest.raises(IndexError, match=re.escape(message)):
        scatterx.gather_nd(data, indices, out=gathered)
    with pytest.raises(IndexError, match=re.escape(message)):
        reference_gather_nd(data, indices)
    assert_bitwise_equal(gathered, np.full(gathered.shape, 7.0))


# out= and in place.


@pytest.mark.parametrize(
    ("key", "reduction"),
    [("float32", "add"), ("int8", "mul"), ("bool", "max"), ("object", "add"), ("float64", "none")],
)
def test_scatter_nd_into_out_and_in_place(key: str, reduction: str) -> None:
    for data, indices, updates in _scatter_cases(key, reduction, 11)[::3]:
        want = reference_scatter_nd(data, indices, updates, reduction)
        out = np.empty_like(data)
        assert scatterx.scatter_nd(data, indices, updates, reduction=reduction, out=out) is out
        assert_bitwise_equal(out, want)
        in_place = data.copy()
        result = scatterx.scatter_nd(in_place, indices, updates, reduction=reduction, out=in_place)
        assert result is in_place
        assert_bitwise_equal(in_place, want)


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd_into_out(batch_dims: int) -> None:
    rng = np.random.default_rng(5)
    data = values("float64", rng, (3, 4, 5), nans=True)
    sizes, lead = ((3, 4), (3, 2)) if batch_dims == 0 else ((4,), (3, 6))
    rows = rows_of(rng, sizes, lead)
    want = reference_gather_nd(data, rows, batch_dims)
    out = np.empty_like(want)
    assert scatterx.gather_nd(data, rows, batch_dims=batch_dims, out=out) is out
    assert_bitwise_equal(out, want)


# explain_nd.


def test_explain_nd_names_numpy_and_passes_over_a_backend_without_nd() -> None:
    from _backends import Recorder
    from scatterx.testing import scoped_registry

    data, rows = np.zeros((3, 2)), np.array([[1]])
    with scoped_registry(Recorder()):
        for updates in (np.ones((1, 2)), None):
            operation = "gather_nd" if updates is None else "scatter_nd"
            decision = scatterx.explain_nd(data, rows, updates, backend=["recorder", "numpy"])
            assert decision.backend == "numpy"
            assert decision.call.startswith(f"{operation}(numpy:ndarray float64 (3, 2)")
            assert decision.reasons["recorder"] == f"has no {operation}"
            assert decision.reasons["numpy"] is None
