"""Start-up costs in a new process: importing scatterx, the numba backend's first call."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

from scatterx_bench.cases import require_backend

from . import HARNESS_ROOT

# The first call of a new process: a float32 add on the small square-random case, one
# kernel signature. The cache folder is set before numba is imported, which importing
# scatterx does not do. The harness is found where this package found it (given here, not in
# the benchmarks' code: a changed benchmark would start its asv history anew).
_FIRST_CALL_SETUP = f"""
import os, sys
os.environ["NUMBA_CACHE_DIR"] = {{cache_dir}}
sys.path.append({HARNESS_ROOT!r})
import scatterx
from scatterx_bench.cases import SIZES, make_case
case = make_case("square-random", SIZES["small"])
"""
_FIRST_CALL = """
scatterx.scatter_elements(*case.arrays, axis=case.axis, reduction="add", backend="numba")
"""
# A fresh folder per process, removed when that process ends: the cold case compiles.
_FRESH_CACHE = """
import atexit, shutil, tempfile
_cache = tempfile.mkdtemp(prefix="scatterx-asv-numba-")
atexit.register(shutil.rmtree, _cache, True)
"""


def timeraw_import_scatterx() -> str:
    """``import scatterx``: must not load numba or cupy (architecture.md)."""
    return "import scatterx"


class NumbaFirstCall:
    """First numba-backend call of a new process, cold (compiling) and from a warm cache.

    performance.md's targets: under 5 s cold, under 0.5 s from the on-disk cache.
    """

    number = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0.0
    timeout = 600

    def setup(self) -> None:
        require_backend("numba")
        self.cache_dir = tempfile.mkdtemp(prefix="scatterx-asv-numba-")
        code = _FIRST_CALL_SETUP.format(cache_dir=repr(self.cache_dir)) + _FIRST_CALL
        # Fill the warm cache once, in a process of its own, as an earlier run would have.
        subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))

    def teardown(self) -> None:
        shutil.rmtree(self.cache_dir, ignore_errors=True)

    def timeraw_first_call_cold(self) -> tuple[str, str]:
        setup = _FRESH_CACHE + _FIRST_CALL_SETUP.format(cache_dir="_cache")
        return _FIRST_CALL, setup

    def timeraw_first_call_warm_cache(self) -> tuple[str, str]:
        return _FIRST_CALL, _FIRST_CALL_SETUP.format(cache_dir=repr(self.cache_dir))
