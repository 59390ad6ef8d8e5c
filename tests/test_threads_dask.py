"""The dask backend's first use from eight threads at once (contract section 13).

Most threads scatter and gather their cases as Dask arrays whose indices and updates are
chunked unlike data, so that the call rechunks them, and dask's rechunk imports
``distributed`` (to ask for a client: a second or so). Threads 0 and 4 keep every array
in one block: they rechunk nothing and go straight on to ask whether a client is the
default (``scatterx_dask._run``), and their tasks how many cores the process has
(``scatterx_dask._cores``), while ``distributed`` is still being imported. Nothing imports
it before the barrier, as nothing would in a user's program that never made a client. Of
the others, odd threads chunk data along the axis too (the routed graph, whose splits
check the indices), even ones keep the axis whole (the folds, behind the bounds guard).
"""

from __future__ import annotations

import pytest

from _threads import first_use_in_threads

pytest.importorskip("dask.array")
pytest.importorskip("distributed")

_DASK = """
import sys
import dask.array as da
import scatterx

assert "distributed" not in sys.modules, "imported before the threads: nothing to race"


def dask_arrays(thread, case):
    if thread % 4 == 0:  # one block each: the call rechunks nothing
        return [da.from_array(a, chunks=-1) for a in (case.data, case.indices, case.updates)]
    axis = case.axis
    # Data: blocks of 2 off the axis; along it too on odd threads.
    data_chunks = tuple(
        size if d == axis and thread % 2 == 0 else 2 for d, size in enumerate(case.data.shape)
    )
    # Indices and updates: blocks of 3, which the call rechunks to data's blocks of 2.
    index_chunks = tuple(3 for _ in case.indices.shape)
    return (
        da.from_array(case.data, chunks=data_chunks),
        da.from_array(case.indices, chunks=index_chunks),
        da.from_array(case.updates, chunks=index_chunks),
    )
"""


def test_scatter_and_gather_first_used_from_threads() -> None:
    first_use_in_threads(
        _DASK
        + """
def first_use(thread, case):
    data, indices, updates = dask_arrays(thread, case)
    scattered = scatterx.scatter_elements(
        data, indices, updates, axis=case.axis, reduction=case.reduction
    )
    gathered = scatterx.gather_elements(data, indices, axis=case.axis)
    assert isinstance(scattered, da.Array), type(scattered)
    assert isinstance(gathered, da.Array), type(gathered)
    check(scattered.compute(), case.scattered)
    check(gathered.compute(), case.gathered)
"""
    )


def test_blocks_on_numba_first_used_from_threads() -> None:
    """Blocks large enough for numba take the process's cores (``scatterx_dask._cores``)
    while other threads' rechunks import ``distributed``; computed by a scheduler function,
    which does not import it first as dask's named schedulers do."""
    pytest.importorskip("numba")
    first_use_in_threads(
        _DASK
        + """
import dask.threaded
import numpy as np

#: A leading dimension of 256: every case then has 8192 updates or more, and its one
#: block runs on numba (scatterx_numba.SMALL_CALL_UPDATES).
COPIES = 256


def stacked(array):
    return np.ascontiguousarray(np.broadcast_to(array, (COPIES, *array.shape)))


def first_use(thread, case):
    if thread % 2:
        data, indices, updates = dask_arrays(thread, case)
        axis, scattered, gathered = case.axis, case.scattered, case.gathered
    else:  # updates meet along the axis only: each copy's result is the case's
        arrays = (case.data, case.indices, case.updates)
        data, indices, updates = (da.from_array(stacked(a), chunks=-1) for a in arrays)
        axis, scattered, gathered = case.axis + 1, stacked(case.scattered), stacked(case.gathered)
    got = scatterx.scatter_elements(data, indices, updates, axis=axis, reduction=case.reduction)
    check(got.compute(scheduler=dask.threaded.get), scattered)
    got = scatterx.gather_elements(data, indices, axis=axis)
    check(got.compute(scheduler=dask.threaded.get), gathered)
"""
    )
