"""The numba backend's first use from eight threads at once (contract section 13).

Half of the threads name numba, and wait for its kernels; the others leave the choice to
scatterx, which in background mode runs numpy while the compile thread loads their code
(``scatterx_numba._background``) and numba once it is in, in wait mode numba at once.
Threads of both kinds make the same kinds of calls (thread 0 and thread 6, say), so that
the first launches, the compile thread's loads and the choices that depend on them
(``scatterx_numba._runtime``, the plans' caches) meet. Once the compile thread is idle,
automatic choice must give each call numba. Each case gets a leading dimension of 256
copies: every call then has 8192 updates or more, which automatic choice gives numba
(``scatterx_numba.SMALL_CALL_UPDATES``).
"""

from __future__ import annotations

import pytest

from _threads import first_use_in_threads

pytest.importorskip("numba")

_NUMBA = """
import numpy as np
import scatterx
from scatterx_numba import _background

#: Copies of each case along a new leading dimension: updates meet along the axis only,
#: so each copy's result is the case's.
COPIES = 256
#: Calls of each case per thread: in background mode the later ones may find numba's code in.
CALLS = 3


def stacked(array):
    return np.ascontiguousarray(np.broadcast_to(array, (COPIES, *array.shape)))


def first_use(thread, case):
    backend = "numba" if thread % 4 < 2 else None
    data, indices, updates = (stacked(a) for a in (case.data, case.indices, case.updates))
    axis = case.axis + 1
    scattered, gathered = stacked(case.scattered), stacked(case.gathered)
    for _ in range(CALLS):
        got = scatterx.scatter_elements(
            data, indices, updates, axis=axis, reduction=case.reduction, backend=backend
        )
        check(got, scattered)
        check(scatterx.gather_elements(data, indices, axis=axis, backend=backend), gathered)
    if backend is None:  # this thread's code is in once no job is left: numba's turn
        assert _background.idle(120), "the compile thread is still busy after 120 s"
        chosen = scatterx.explain(data, indices, updates, axis=axis, reduction=case.reduction)
        assert chosen.backend == "numba", str(chosen)
        assert scatterx.explain_gather(data, indices, axis=axis).backend == "numba"
        got = scatterx.scatter_elements(data, indices, updates, axis=axis, reduction=case.reduction)
        check(got, scattered)
        check(scatterx.gather_elements(data, indices, axis=axis), gathered)
"""


@pytest.mark.parametrize("mode", ["background", "wait"])
def test_named_and_automatic_first_used_from_threads(mode: str) -> None:
    first_use_in_threads(_NUMBA, env={"SCATTERX_NUMBA_COMPILE": mode})
