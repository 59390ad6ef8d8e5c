"""What the dask tests of the scatter and of the gather share: a scheduler that refuses,
chunks along or off the axis, arrays with bad indices, and the error the first one raises."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import numpy as np
import pytest

from scatterx.backend import out_of_bounds_error

Array = np.ndarray[Any, Any]
Test = TypeVar("Test", bound=Callable[..., None])


def refuse(*args: Any, **kwargs: Any) -> Any:
    """A dask scheduler that fails the test: nothing may be computed here."""
    msg = "a task graph was computed"
    raise AssertionError(msg)


def no_compute() -> Iterator[list[Any]]:
    """Inside: any computation raises, and every graph started is listed (a fixture's body:
    each test module makes it one with ``pytest.fixture``)."""
    import dask
    from dask import callbacks

    started: list[Any] = []
    with (
        dask.config.set(scheduler=refuse),
        callbacks.Callback(start_state=lambda dsk, state: started.append(dsk)),
    ):
        yield started


def assert_lazy(result: Any, decision: Any, started: list[Any], says: str) -> None:
    """``result`` is a Dask array, made by the dask backend (its ``decision`` says ``says``)
    while nothing was computed, and computing it springs the trap of :func:`no_compute`."""
    import dask.array as da

    assert not started
    assert isinstance(result, da.Array)
    assert decision.backend == "dask"
    assert says in str(decision)
    with pytest.raises(AssertionError, match="computed"):
        result.compute()  # the trap springs when something is computed


def side_chunks(chunks: Any, axis: int) -> Any:
    """Chunks of 2-d data: ``"along"`` (``"off"``) stands for 2s along (off) the axis and one
    chunk on the other dimension; anything else is chunks already."""
    if not isinstance(chunks, str):
        return chunks
    return tuple(2 if (d == axis) == (chunks == "along") else -1 for d in range(2))


def with_unknown_sizes(array: Any) -> Any:
    """``array`` (a Dask array) through a boolean mask: chunks of unknown size."""
    import dask.array as da

    return array[da.ones(array.shape[0], dtype=bool, chunks=3)]


def bad_indices(shape: tuple[int, ...], bad: dict[tuple[int, ...], int]) -> tuple[Array, Array]:
    """Data (6, 8) and zero indices of ``shape`` with the ``bad`` values at their positions."""
    data = np.arange(48.0).reshape(6, 8)
    indices = np.zeros(shape, np.int64)
    for position, value in bad.items():
        indices[position] = value
    return data, indices


def first_bad(indices: Array, axis: int, size: int) -> tuple[tuple[int, ...], str]:
    """The position of the first index out of bounds in C order, and the message of its
    IndexError as a regular expression."""
    flat = int(np.flatnonzero((indices < -size) | (indices >= size))[0])
    position = tuple(int(i) for i in np.unravel_index(flat, indices.shape))
    error = out_of_bounds_error(int(indices.flat[flat]), position, axis, size)
    return position, re.escape(str(error))


def over_bounds_grid(chunkings: Iterable[str]) -> Callable[[Test], Test]:
    """Parametrize an out-of-bounds test over each axis, each of ``chunkings`` and each
    scheduler (``axis``, ``chunking``, ``scheduler``)."""
    grid: dict[str, list[Any]] = {
        "axis": [0, 1],
        "chunking": list(chunkings),
        "scheduler": ["sync", "threads"],
    }

    def mark(test: Test) -> Test:
        for name, values in grid.items():
            test = pytest.mark.parametrize(name, values)(test)
        return test

    return mark


def assert_each_raises(parts: Iterable[Any], message: str, scheduler: str) -> None:
    """Computing each of ``parts`` raises an IndexError saying ``message`` (a pattern),
    no more and no less."""
    for part in parts:
        with pytest.raises(IndexError, match=f"^{message}$"):
            part.compute(scheduler=scheduler)


def cluster_client(module_name: str, **cluster: Any) -> Iterator[Any]:
    """A client of a fresh LocalCluster of 2 worker processes, 1 thread each, as long as
    the generator runs (a module fixture's body). The workers cannot import a test module
    by name: ``module_name``'s functions travel by value. ``cluster``: more arguments of
    ``LocalCluster``."""
    import sys

    distributed = pytest.importorskip("distributed")
    cloudpickle = pytest.importorskip("cloudpickle")
    module = sys.modules[module_name]
    cloudpickle.register_pickle_by_value(module)
    local = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, **cluster
    )
    client = distributed.Client(local)
    try:
        yield client
    finally:
        client.close()
        local.close()
        cloudpickle.unregister_pickle_by_value(module)
