"""The first automatic call of a new process, against numpy's, with a cold numba cache.

Issue 13's target: that call returns within the numpy backend's time for it plus 50 ms,
while numba compiles in the background; later calls switch to numba. Each round starts two
new processes on a 1,000,000-update float32 ``add`` (data and indices (1000, 1000), axis
0, random indices): one times the numpy backend's first call (and its median over the next
five), the other, with an empty ``NUMBA_CACHE_DIR``, the first automatic call, then calls
back to back until numba runs one, and says after how many calls and seconds it did.
Run: ``python tools/first_call.py [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

# Each child prints one JSON line; the case is built before any timing.
_CASE = """
import json, logging, statistics, sys, time
import numpy as np
import scatterx
rng = np.random.default_rng(0)
data = rng.random((1000, 1000), dtype=np.float32)
indices = rng.integers(0, 1000, (1000, 1000))
updates = rng.random((1000, 1000), dtype=np.float32)

def call(**kwargs):
    start = time.perf_counter()
    out = scatterx.scatter_elements(data, indices, updates, reduction="add", **kwargs)
    return out, time.perf_counter() - start
"""

_NUMPY = """
_, first = call(backend="numpy")
later = statistics.median(call(backend="numpy")[1] for _ in range(5))
print(json.dumps({"first": first, "later": later}))
"""

_AUTOMATIC = """
started = time.perf_counter()
first_out, first = call()
reason = scatterx.explain(data, indices, updates, reduction="add").reasons["numba"]
chosen = []
class Chosen(logging.Handler):
    def emit(self, record):  # the decisions, not the compile thread's news
        backend, _, rest = record.getMessage().partition(" ")
        if rest.startswith("runs "):
            chosen.append(backend)
logger = logging.getLogger("scatterx")
logger.addHandler(Chosen())
logger.setLevel(logging.DEBUG)
calls, at, deadline = 1, None, time.monotonic() + float(sys.argv[1])
while at is None and time.monotonic() < deadline:
    before = time.perf_counter()
    out, _ = call()
    calls += 1
    assert out.tobytes() == first_out.tobytes(), "not numpy's bits"
    if chosen[-1] == "numba":
        at = before - started
numba = statistics.median(call()[1] for _ in range(5)) if at is not None else None
print(json.dumps({"first": first, "reason": reason, "calls": calls, "at": at, "numba": numba}))
"""


def _summary(round_: int, numpy: dict[str, Any], automatic: dict[str, Any]) -> str:
    line = (
        f"round {round_}: numpy first call {numpy['first'] * 1e3:.1f} ms "
        f"(then {numpy['later'] * 1e3:.1f} ms); first automatic call "
        f"{automatic['first'] * 1e3:.1f} ms ({(automatic['first'] - numpy['first']) * 1e3:+.1f}"
        f" ms), numba: {automatic['reason']!r}; "
    )
    if automatic["at"] is None:
        return line + f"numba had not taken over after {automatic['calls']} calls"
    return line + (
        f"numba ran call {automatic['calls']}, {automatic['at']:.1f} s after the first, "
        f"then {automatic['numba'] * 1e3:.1f} ms a call"
    )


def _child(code: str, env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"child failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="pairs of processes (3)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for numba")
    args = parser.parse_args(argv)
    for round_ in range(1, args.rounds + 1):
        env = {**os.environ, "SCATTERX_NUMBA_COMPILE": "background"}
        numpy = _child(_CASE + _NUMPY, env)
        with tempfile.TemporaryDirectory(prefix="scatterx-first-call-") as cache:
            env["NUMBA_CACHE_DIR"] = cache
            automatic = _child(_CASE + _AUTOMATIC, env, str(args.timeout))
        print(_summary(round_, numpy, automatic), flush=True)


if __name__ == "__main__":
    main()
