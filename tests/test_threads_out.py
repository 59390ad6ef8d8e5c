"""``out=`` from eight threads at once while numba loads its code in the background
(contract section 13): its ``typeof`` imports ``numpy.ma`` in that thread, and the checks
of ``out`` must never see that module half-imported (issue 42)."""

from __future__ import annotations

import pytest

from _threads import first_use_in_threads

pytest.importorskip("numba")

#: Each thread keeps calling with ``out=`` until numba's background load is over, so that
#: the calls meet every step of it, ``numpy.ma``'s import (which its ``typeof`` starts)
#: among them. The large call is one that automatic choice gives numba once its code is
#: in (16384 updates): asking ``explain`` about it starts the load, and tells when it ended.
_PREPARE = """
import time
import scatterx

LARGE = (np.zeros((128, 128)), np.zeros((128, 128), np.int64), np.ones((128, 128)))
#: A cold numba cache compiles for about 20 s on a 2-core machine; a warm one loads in 1 s.
LOAD_TIMEOUT = 240


def calls_with_out(case):
    call = {"axis": case.axis, "reduction": case.reduction}
    fresh = np.empty_like(case.data)
    got = scatterx.scatter_elements(case.data, case.indices, case.updates, out=fresh, **call)
    assert got is fresh
    check(fresh, case.scattered)
    data = case.data.copy()
    got = scatterx.scatter_elements(data, case.indices, case.updates, out=data, **call)
    assert got is data
    check(data, case.scattered)
    gathered = np.empty(case.indices.shape, case.data.dtype)
    got = scatterx.gather_elements(case.data, case.indices, axis=case.axis, out=gathered)
    assert got is gathered
    check(gathered, case.gathered)


def first_use(thread, case):
    deadline = time.monotonic() + LOAD_TIMEOUT
    while scatterx.explain(*LARGE, reduction="add").backend != "numba":
        calls_with_out(case)
        assert time.monotonic() < deadline, f"numba's load took over {LOAD_TIMEOUT} s"
        # A pause between rounds of calls leaves the compile thread its share of the
        # interpreter lock: eight busy threads would stretch its load tenfold.
        time.sleep(0.001)
    calls_with_out(case)
"""


def test_out_while_numba_loads_in_the_background() -> None:
    """NumPy arrays as ``out`` (new ones, ``data`` itself, a gather's) in every thread."""
    first_use_in_threads(_PREPARE, env={"SCATTERX_NUMBA_COMPILE": "background"}, timeout=300)
