"""Forked children after numba ran: a bare fork, a fork mid-call, a Pool, a torch DataLoader.

Each scenario runs in a fresh process under numba's default threading layer (GNU OpenMP
here, which cannot start again in a child) and under ``workqueue``; every child must
answer with the oracle's bits, within a timeout.
"""

from __future__ import annotations

import pytest

from _subprocess import run_python

pytest.importorskip("numba", reason="numba is not installed (the numba extra)")

# The call every child makes: big enough that automatic choice picks numba in the parent.
PRELUDE = """
import os, signal, sys, threading, time
import numpy as np, numba, scatterx
from scatterx.testing import reference_scatter_elements
rng = np.random.default_rng(0)
DATA = rng.standard_normal((64, 300)).astype(np.float32)
INDICES = rng.integers(-64, 64, (90, 300))
UPDATES = rng.standard_normal((90, 300)).astype(np.float32)
EXPECTED = reference_scatter_elements(DATA, INDICES, UPDATES, reduction="add").tobytes()

def call():
    return scatterx.scatter_elements(DATA, INDICES, UPDATES, reduction="add")

assert scatterx.explain(DATA, INDICES, UPDATES, reduction="add").backend == "numba"
assert call().tobytes() == EXPECTED
"""

# Forks five times; with "mid-call", a thread keeps numba busy while the parent forks.
BARE_FORK = """
stop, started = threading.Event(), threading.Event()
def busy():
    big = rng.standard_normal((512, 2048)).astype(np.float32)
    idx = rng.integers(0, 512, (2048, 2048))
    upd = rng.standard_normal((2048, 2048)).astype(np.float32)
    while not stop.is_set():
        started.set()
        scatterx.scatter_elements(big, idx, upd, reduction="add", backend="numba")
if sys.argv[1] == "mid-call":
    worker = threading.Thread(target=busy)
    worker.start()
    started.wait()
statuses = []
for _ in range(5):
    time.sleep(0.005)
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)  # a child that hangs dies, and its status says so
        os._exit(0 if call().tobytes() == EXPECTED else 3)
    statuses.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
stop.set()
if sys.argv[1] == "mid-call":
    worker.join()
print(numba.threading_layer(), statuses)
"""

POOL = """
import multiprocessing
def work(k):
    return call().tobytes() == EXPECTED
with multiprocessing.get_context("fork").Pool(2) as pool:
    answers = pool.map_async(work, range(20)).get(timeout=120)
print(numba.threading_layer(), answers.count(True), len(answers))
"""

DATALOADER = """
import torch
class Calls(torch.utils.data.Dataset):
    def __len__(self):
        return 6
    def __getitem__(self, k):
        return torch.from_numpy(call())
loader = torch.utils.data.DataLoader(
    Calls(), batch_size=2, num_workers=2, multiprocessing_context="fork", timeout=120
)
answers = [bool((batch.numpy() == np.frombuffer(EXPECTED, np.float32).reshape(DATA.shape)).all())
           for batch in loader]
print(numba.threading_layer(), answers.count(True), len(answers))
"""

LAYERS = ["default", "workqueue"]


def _run(script: str, layer: str, *args: str) -> list[str]:
    env = {} if layer == "default" else {"NUMBA_THREADING_LAYER": layer}
    stdout = run_python(PRELUDE + script, *args, env=env, timeout=240)
    used, said = stdout.strip().split(maxsplit=1)
    if layer != "default":
        assert used == layer
    return [used, said]


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("when", ["after-a-call", "mid-call"])
def test_forked_children_answer_right(layer: str, when: str) -> None:
    _, statuses = _run(BARE_FORK, layer, when)
    assert statuses == "[0, 0, 0, 0, 0]"


@pytest.mark.parametrize("layer", LAYERS)
def test_a_fork_start_pool_maps_twenty_calls(layer: str) -> None:
    _, counts = _run(POOL, layer)
    assert counts == "20 20"


@pytest.mark.parametrize("layer", LAYERS)
def test_a_torch_dataloader_with_two_workers(layer: str) -> None:
    pytest.importorskip("torch", reason="torch is not installed (.ci/run installs a CPU build)")
    _, counts = _run(DATALOADER, layer)
    assert counts == "3 3"


def test_a_forked_child_of_an_openmp_parent_says_why_numba_does_not_run() -> None:
    script = """
pid = os.fork()
if pid == 0:
    decision = scatterx.explain(DATA, INDICES, UPDATES, reduction="add")
    try:
        scatterx.scatter_elements(DATA, INDICES, UPDATES, reduction="add", backend="numba")
        named = "ran"
    except scatterx.BackendError as exc:
        named = str(exc)
    ok = decision.backend == "numpy" and "GNU OpenMP" in named and "forkserver" in named
    os._exit(0 if ok or numba.threading_layer() != "omp" else 4)
print(numba.threading_layer(), os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""
    _, status = _run(script, "default")
    assert status == "0"
