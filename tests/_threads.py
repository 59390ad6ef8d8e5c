"""Eight threads released together into a cold first use, in a fresh interpreter.

Contract section 13: what is set up on first use (torch operators, the JAX FFI target,
ONNX ops, numba's compiles and decisions, Dask's first look at a cluster, result pools) is
set up once, under a lock. :func:`first_use_in_threads` runs a host's first calls from
:data:`THREADS` threads that a :class:`threading.Barrier` releases at once, in a new
process each round, and requires every result bitwise equal to the loop oracle, a zero
exit and nothing at all on stderr (a warning printed there is a failure too).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

THREADS = 8

#: What every round runs before its host's code: the cases (several shapes and dtypes per
#: thread, each thread its own) with the oracle's answers, and the harness that releases
#: the threads. Only NumPy and the oracles are loaded before the barrier; the host's
#: ``prepare`` may import its own library there, never call scatterx.
_HARNESS = """
import sys, threading, traceback
from typing import NamedTuple
import numpy as np
from scatterx.testing import (
    assert_bitwise_equal, reference_gather_elements, reference_scatter_elements,
)

THREADS = {threads}


class Case(NamedTuple):
    data: np.ndarray
    indices: np.ndarray
    updates: np.ndarray
    axis: int
    reduction: str
    scattered: np.ndarray
    gathered: np.ndarray


_KINDS = (
    ((5, 7), np.float64, "add"),
    ((33,), np.float32, "none"),
    ((3, 4, 5), np.int32, "max"),
    ((6, 6), np.int64, "mul"),
    ((4, 9), np.float32, "min"),
)


def cases(thread):
    rng = np.random.default_rng(thread)
    for number, (shape, dtype, reduction) in enumerate(_KINDS):
        shape = tuple(size + thread % 3 for size in shape)
        axis = (thread + number) % len(shape)
        index_shape = list(shape)
        index_shape[axis] = shape[axis] + 2
        data = rng.integers(-9, 9, size=shape).astype(dtype)
        updates = rng.integers(-9, 9, size=index_shape).astype(dtype)
        indices = rng.integers(-shape[axis], shape[axis], size=index_shape)
        indices = indices.astype(np.int32 if thread % 2 else np.int64)
        scattered = reference_scatter_elements(data, indices, updates, axis, reduction)
        gathered = reference_gather_elements(data, indices, axis)
        yield Case(data, indices, updates, axis, reduction, scattered, gathered)


def check(got, want):
    assert_bitwise_equal(np.asarray(got), want)


{prepare}

CASES = [list(cases(thread)) for thread in range(THREADS)]
start = threading.Barrier(THREADS)
failures = []


def worker(thread):
    start.wait()
    try:
        for case in CASES[thread]:
            first_use(thread, case)
    except BaseException:
        failures.append(f"thread {{thread}}:\\n{{traceback.format_exc()}}")


threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
if failures:
    print("\\n".join(failures))
    sys.exit(1)
print("ok", THREADS, "threads")
"""


def first_use_in_threads(
    prepare: str,
    *,
    rounds: int = 2,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> None:
    """Run ``first_use(thread, case)`` of ``prepare`` from :data:`THREADS` threads at once.

    ``prepare`` is Python code that defines ``first_use(thread, case)``: it calls scatterx
    on ``case`` (a NamedTuple of NumPy arrays, ``axis``, ``reduction`` and the oracle's
    ``scattered`` and ``gathered``) as its host would, and compares with ``check(got,
    want)``. Each of ``rounds`` rounds is a new interpreter; the test fails on a non-zero
    exit (a crash included) or any output on stderr.
    """
    script = _HARNESS.format(threads=THREADS, prepare=textwrap.dedent(prepare))
    for round_number in range(rounds):
        result = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
            timeout=timeout,
            check=False,
        )
        where = f"round {round_number + 1} of {rounds}, exit {result.returncode}"
        assert result.returncode == 0, f"{where}\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        assert result.stderr == "", f"{where}: stderr not empty\n{result.stderr[-3000:]}"
        assert result.stdout.strip() == f"ok {THREADS} threads", result.stdout[-3000:]
