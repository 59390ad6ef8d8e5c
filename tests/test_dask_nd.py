"""scatter_nd and gather_nd on the dask backend: the loop oracles' and the numpy backend's
bits under chunkings along the indexed and the trailing dimensions, every reduction,
repeated and negative rows, batch_dims; laziness; the first bad index in C order;
the threaded scheduler and a ``distributed`` cluster (contract.md sections 8 and 14)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import _dask_checks as checks
import scatterx
from _nd_arrays import rows as rows_of
from _nd_arrays import values
from scatterx.backend import out_of_bounds_error
from scatterx.testing import assert_bitwise_equal, reference_gather_nd, reference_scatter_nd

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

Array = np.ndarray[Any, Any]
Shape = tuple[int, ...]

DTYPES = ["bool", "int8", "int64", "float16", "float32", ">f8", "complex128", "object"]
DTYPES += ["StringDType"] if hasattr(np.dtypes, "StringDType") else []
PAIRS = [
    (key, reduction)
    for key in DTYPES
    for reduction in scatterx.REDUCTIONS
    if reduction in scatterx.DTYPE_REDUCTIONS[np.dtype(key).name if key != "StringDType" else key]
]
#: (data shape, depth): ranks 1 to 4, every depth of a rank 3.
SHAPES: list[tuple[Shape, int]] = [((6,), 1), ((5, 4, 3), 1), ((5, 4, 3), 2), ((5, 4, 3), 3)]
SHAPES += [((3, 2, 3, 4), 2)]
#: indices.shape[:-1]: one row (0-d updates where depth is the rank), 1-d and 2-d, empty.
LEADS: list[Shape] = [(), (7,), (3, 4), (0,)]
#: How data is chunked: whole; along the indexed dimensions; along the trailing ones; both.
CHUNKINGS = ["whole", "indexed", "trailing", "small"]
#: Every dtype and reduction chunked along both; a float and a string dtype chunked every way.
SCATTER_GRID = [(key, reduction, "small") for key, reduction in PAIRS] + [
    (key, reduction, chunking)
    for key, reduction in PAIRS
    if key in ("float32", "object")
    for chunking in CHUNKINGS[:3]
]
GATHER_GRID = [(key, "small") for key in DTYPES]
GATHER_GRID += [(key, chunking) for key in ("float32", DTYPES[-1]) for chunking in CHUNKINGS[:3]]

no_compute = pytest.fixture(checks.no_compute)


def _chunks(shape: Shape, indexed: tuple[int, int], how: str) -> tuple[int, ...]:
    """Chunks of data of ``shape`` whose dimensions ``indexed[0]`` to ``indexed[1]`` are
    indexed, as ``how`` says (one of :data:`CHUNKINGS`)."""
    low, high = indexed
    along = {"whole": (), "indexed": range(low, high), "trailing": range(high, len(shape))}
    chunked = along.get(how, range(len(shape)))
    return tuple(2 if d in chunked else -1 for d in range(len(shape)))


def _lazy(array: Array, chunks: Any) -> Any:
    return da.from_array(array, chunks=chunks, asarray=False)


def _index_chunks(indices: Array) -> tuple[int, ...]:
    """Indices in blocks of 2 rows, their columns in blocks of 2 too."""
    return (2,) * indices.ndim


@pytest.mark.parametrize(("key", "reduction", "chunking"), SCATTER_GRID)
def test_scatter_nd_equals_the_oracle_and_numpy(key: str, reduction: str, chunking: str) -> None:
    rng = np.random.default_rng(len(key) * 7 + len(reduction))
    for shape, depth in SHAPES:
        for lead in LEADS:
            data = values(key, rng, shape, nans=True)
            rows = rows_of(rng, shape[:depth], lead)
            updates = values(key, rng, lead + shape[depth:], reduction not in ("add", "mul"))
            lazy = scatterx.scatter_nd(
                _lazy(data, _chunks(shape, (0, depth), chunking)),
                _lazy(rows, _index_chunks(rows)),
                _lazy(updates, 2),
                reduction=reduction,
            )
            assert isinstance(lazy, da.Array)
            assert lazy.chunks == _lazy(data, _chunks(shape, (0, depth), chunking)).chunks
            got = np.asarray(lazy.compute())
            want = reference_scatter_nd(data, rows, updates, reduction)
            numpy = scatterx.scatter_nd(data, rows, updates, reduction=reduction, backend="numpy")
            where = f"data {shape}, indices {rows.shape}"
            try:
                assert_bitwise_equal(got, want)
                assert_bitwise_equal(got, numpy)
            except AssertionError as exc:
                msg = f"{where}: {exc}"
                raise AssertionError(msg) from None


@pytest.mark.parametrize("batch_dims", [0, 1, 2])
@pytest.mark.parametrize(("key", "chunking"), GATHER_GRID)
def test_gather_nd_equals_the_oracle_and_numpy(key: str, batch_dims: int, chunking: str) -> None:
    rng = np.random.default_rng(batch_dims + len(key))
    for shape in [(6, 5), (5, 4, 3), (3, 2, 3, 4)][max(0, batch_dims - 1) :]:
        data = values(key, rng, shape, nans=True)
        for depth in range(1, len(shape) - batch_dims + 1):
            indexed = (batch_dims, batch_dims + depth)
            for lead in LEADS:
                rows = rows_of(rng, shape[indexed[0] : indexed[1]], shape[:batch_dims] + lead)
                lazy = scatterx.gather_nd(
                    _lazy(data, _chunks(shape, indexed, chunking)),
                    _lazy(rows, _index_chunks(rows)),
                    batch_dims=batch_dims,
                )
                assert isinstance(lazy, da.Array)
                got = np.asarray(lazy.compute())
                numpy = scatterx.gather_nd(data, rows, batch_dims=batch_dims, backend="numpy")
                try:
                    assert_bitwise_equal(got, reference_gather_nd(data, rows, batch_dims))
                    assert_bitwise_equal(got, numpy)
                except AssertionError as exc:
                    where = f"data {shape}, indices {rows.shape}, batch_dims={batch_dims}"
                    msg = f"{where}: {exc}"
                    raise AssertionError(msg) from None


def test_empty_slices_and_int32_indices() -> None:
    data, rows = np.arange(12.0).reshape(4, 3, 1)[:, :, :0], np.array([[1, 2], [-1, 0]], np.int32)
    lazy = scatterx.scatter_nd(_lazy(data, 2), _lazy(rows, 1), _lazy(np.zeros((2, 0)), 1))
    assert_bitwise_equal(np.asarray(lazy.compute()), data)
    gathered = scatterx.gather_nd(_lazy(data, 2), _lazy(rows, 1)).compute()
    assert_bitwise_equal(np.asarray(gathered), reference_gather_nd(data, rows))


# --- Laziness and bounds -----------------------------------------------------------------


def _bad_rows() -> tuple[Array, Array]:
    """Data (6, 5, 4) and rows (9, 2) whose first bad index in C order is (3, 1), with a
    later one in an earlier block of rows' columns and one in a later block of rows."""
    data = np.arange(120.0).reshape(6, 5, 4)
    rows = np.zeros((9, 2), np.int64)
    rows[3, 1] = 5  # the first bad index in C order: dimension 1, of size 5
    rows[4, 0] = -7
    rows[8, 1] = -6
    return data, rows


def _bad_message(data: Array, rows: Array, batch_dims: int = 0) -> str:
    """The numpy backend's IndexError for ``rows``, as a pattern."""
    with pytest.raises(IndexError) as caught:
        scatterx.gather_nd(data, rows, batch_dims=batch_dims, backend="numpy")
    return re.escape(str(caught.value))


@pytest.mark.parametrize("data_chunks", [(2, 5, 4), (6, 5, 2), (6, 2, 3), -1])
@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_the_first_bad_index_in_c_order(data_chunks: Any, scheduler: str) -> None:
    data, rows = _bad_rows()
    message = _bad_message(data, rows)
    assert message == re.escape(str(out_of_bounds_error(5, (3, 1), 1, 5)))
    updates = _lazy(np.ones((9, 4)), 3)
    for row_chunks in [(4, 1), (2, 2), -1]:
        lazy_data, lazy_rows = _lazy(data, data_chunks), _lazy(rows, row_chunks)
        for reduction in ("none", "add"):
            lazy = scatterx.scatter_nd(lazy_data, lazy_rows, updates, reduction=reduction)
            with pytest.raises(IndexError, match=f"^{message}$"):
                lazy.compute(scheduler=scheduler)
        with pytest.raises(IndexError, match=f"^{message}$"):
            scatterx.gather_nd(lazy_data, lazy_rows).compute(scheduler=scheduler)


def test_batch_dims_name_the_dimension_of_data() -> None:
    data = np.zeros((3, 4, 2))
    rows = np.zeros((3, 5, 1), np.int64)
    rows[2, 1, 0], rows[1, 3, 0] = -5, 4
    lazy = scatterx.gather_nd(_lazy(data, (1, 2, 2)), _lazy(rows, 2), batch_dims=1)
    with pytest.raises(IndexError, match=f"^{_bad_message(data, rows, 1)}$"):
        lazy.compute()


def test_empty_slices_still_check_every_index() -> None:
    data = np.zeros((4, 0))
    rows = np.array([[1], [4]])
    message = str(out_of_bounds_error(4, (1, 0), 0, 4))
    lazy = scatterx.scatter_nd(_lazy(data, 2), _lazy(rows, 1), _lazy(np.zeros((2, 0)), 1))
    with pytest.raises(IndexError, match=re.escape(message)):
        lazy.compute()
    with pytest.raises(IndexError, match=re.escape(message)):
        scatterx.gather_nd(_lazy(data, 2), _lazy(rows, 1)).compute()


def test_nothing_is_computed_at_the_call(no_compute: list[Any]) -> None:
    data, rows = _bad_rows()
    lazy_data, lazy_rows = _lazy(data, (2, 2, 2)), _lazy(rows, (2, 1))
    updates = _lazy(np.ones((9, 4)), 2)
    result = scatterx.scatter_nd(lazy_data, lazy_rows, updates, reduction="add")
    decision = scatterx.explain_nd(lazy_data, lazy_rows, updates, reduction="add")
    checks.assert_lazy(result, decision, no_compute, "scatter_nd(dask:Array")
    gathered = scatterx.gather_nd(lazy_data, lazy_rows)
    decision = scatterx.explain_nd(lazy_data, lazy_rows)
    checks.assert_lazy(gathered, decision, no_compute, "gather_nd(dask:Array")


def test_out_is_refused_for_dask_arrays() -> None:
    data = _lazy(np.zeros((3, 2)), 1)
    rows = _lazy(np.array([[1]]), 1)
    with pytest.raises(TypeError, match="Dask arrays are lazy"):
        scatterx.scatter_nd(data, rows, _lazy(np.ones((1, 2)), 1), out=data)
    with pytest.raises(TypeError, match="Dask arrays are lazy"):
        scatterx.gather_nd(data, rows, out=_lazy(np.zeros((1, 2)), 1))


def test_trailing_blocks_are_independent() -> None:
    """Data whole along the indexed dimensions, in blocks along the slice: each block of
    the result reads its own block of data and of updates, and no route."""
    data = np.zeros((4, 6))
    rows = np.array([[2], [0], [2]])
    updates = np.arange(18.0).reshape(3, 6)
    lazy = scatterx.scatter_nd(_lazy(data, (4, 2)), _lazy(rows, 3), _lazy(updates, (3, 2)))
    keys = [str(key) for key in dict(lazy.__dask_graph__())]
    assert not [key for key in keys if "-split" in key or "-route-" in key]
    assert_bitwise_equal(np.asarray(lazy.compute()), reference_scatter_nd(data, rows, updates))


# --- A distributed cluster ---------------------------------------------------------------


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A client of a small LocalCluster: 2 worker processes, 1 thread each."""
    yield from checks.cluster_client(__name__)


@pytest.mark.xdist_group("dask-distributed")
def test_on_a_distributed_cluster(client: Any) -> None:
    rng = np.random.default_rng(11)
    data = rng.standard_normal((8, 6, 5))
    rows = rows_of(rng, (8, 6), (20,))
    updates = rng.standard_normal((20, 5))
    lazy_data, lazy_rows = _lazy(data, (3, 2, 3)), _lazy(rows, (6, 1))
    for reduction in ("none", "add"):
        lazy = scatterx.scatter_nd(lazy_data, lazy_rows, _lazy(updates, 7), reduction=reduction)
        got = client.compute(lazy).result(timeout=120)
        assert_bitwise_equal(got, reference_scatter_nd(data, rows, updates, reduction))
    gathered = client.compute(scatterx.gather_nd(lazy_data, lazy_rows)).result(timeout=120)
    assert_bitwise_equal(gathered, reference_gather_nd(data, rows))
    bad, bad_rows = _bad_rows()
    lazy = scatterx.scatter_nd(_lazy(bad, 2), _lazy(bad_rows, 2), _lazy(np.ones((9, 4)), 2))
    with pytest.raises(IndexError, match=f"^{_bad_message(bad, bad_rows)}$"):
        client.compute(lazy).result(timeout=120)
