"""The decision key holds all that a backend's choice depends on: out mode and layout too.

After numba is chosen for a call's metadata, a call of the same metadata with ``out=``
(another array, or data in place) or with its arrays in another layout may need kernels
that are not loaded yet; it must then run on numpy while they load, never wait for the
compiler in the foreground. Checked in a new process with an empty numba cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import scatterx
from scatterx._check import normalise
from scatterx._plan import decision_key

pytest.importorskip("numba")

_CODE = """
import json, logging, time
import numpy as np, scatterx, scatterx_numba
from scatterx._check import normalise
rng = np.random.default_rng(0)
data = rng.random((1000, 1000), dtype=np.float32)
indices = rng.integers(0, 1000, (1000, 1000))
updates = rng.random((1000, 1000), dtype=np.float32)
expected = scatterx.scatter_elements(data, indices, updates, reduction="add", backend="numpy")
ran = []

class Ran(logging.Handler):
    def emit(self, record):
        backend, _, rest = record.getMessage().partition(" ")
        if rest.startswith("runs "):
            ran.append(backend)

logging.getLogger("scatterx").addHandler(Ran())
logging.getLogger("scatterx").setLevel(logging.DEBUG)
seen = {}

def until_numba(mode, make):
    deadline, calls = time.monotonic() + 300, []
    while True:
        assert time.monotonic() < deadline, f"numba never took over {mode}"
        d, out, i, u = make()
        waiting = scatterx_numba.backend.skip_automatic(normalise(d, i, u, 0, "add", out))
        result = scatterx.scatter_elements(d, i, u, reduction="add", out=out)
        assert np.array_equal(result, expected), mode
        calls.append((waiting is not None, ran[-1]))
        if ran[-1] == "numba":
            seen[mode] = calls
            return
        time.sleep(0.05)

until_numba("new", lambda: (data, None, indices, updates))
until_numba("separate out", lambda: (data, np.empty_like(data), indices, updates))
def in_place():
    d = data.copy()
    return d, d, indices, updates
until_numba("in place", in_place)
fortran = np.asfortranarray(data)
until_numba("F-ordered data", lambda: (fortran, None, indices, updates))
print(json.dumps(seen))
"""


def test_a_new_out_mode_or_layout_never_waits_for_the_compiler(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "SCATTERX_NUMBA_COMPILE": "background",
        "NUMBA_CACHE_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "-c", _CODE], capture_output=True, text=True, env=env, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout)
    assert set(seen) == {"new", "separate out", "in place", "F-ordered data"}
    for mode, calls in seen.items():
        # Whenever numba's kernels for this call were still loading, numpy ran it.
        assert all(ran == "numpy" for waiting, ran in calls if waiting), (mode, calls)
        assert calls[-1] == [False, "numba"], (mode, calls)
    # The out= modes need kernels of their own (the bounds pass first): the test bites.
    assert seen["separate out"][0] == [True, "numpy"]


def test_the_key_tells_the_out_modes_and_layouts_apart() -> None:
    data, indices, updates = np.zeros((4, 5)), np.zeros((2, 5), dtype=np.int64), np.ones((2, 5))
    keys = {
        decision_key(normalise(data, indices, updates, 0, "add")),
        decision_key(normalise(data, indices, updates, 0, "add", np.empty_like(data))),
        decision_key(normalise(data, indices, updates, 0, "add", data)),
        decision_key(normalise(np.asfortranarray(data), indices, updates, 0, "add")),
        decision_key(normalise(data, indices, np.asfortranarray(updates), 0, "add")),
    }
    assert len(keys) == 5
    again = decision_key(normalise(data.copy(), indices.copy(), updates.copy(), 0, "add"))
    assert again in keys
    assert scatterx.explain(data, indices, updates).backend == "numpy"
