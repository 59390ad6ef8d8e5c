"""airspeed velocity suites of scatterx: backends, peers, small calls, start-up, memory.

asv imports this package by itself, without its folder's parent on ``sys.path``; the suites'
harness, ``scatterx_bench``, lives in that parent (asv_bench/), which is added here so that
the suites can import it: beside the suites, not in the installed scatterx.
"""

import sys
from pathlib import Path

#: The folder holding ``scatterx_bench``; processes the suites start need it on their path.
HARNESS_ROOT = str(Path(__file__).resolve().parent.parent)
if HARNESS_ROOT not in sys.path:
    sys.path.append(HARNESS_ROOT)

# The suites time compiled code: asv's benchmark processes, started from the one that
# imports this package, inherit the compile mode (wait_for_numba says why). Here, not in
# each suite's setup: a changed setup would start that benchmark's asv history anew.
from scatterx_bench.base import wait_for_numba  # noqa: E402  (found once the path is set)

wait_for_numba()
