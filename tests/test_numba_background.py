"""numba compiling in the background: automatic choice runs numpy until a call's code is in.

The suite runs in wait mode (conftest.py); the processes started here ask for the
background, with numba caches of their own, empty: cold.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx._check import normalise, normalise_gather
from scatterx.backend import Request, ScatterRequest, TransientReason

pytest.importorskip("numba", reason="numba is not installed (the numba extra)")

import numba

import scatterx_numba
from scatterx_numba import _background, _runtime, _views
from scatterx_numba.plan import call as _call

COMPILING = "compiling float32 add kernels in the background; numpy runs meanwhile"

# --- automatic choice does not remember a transient reason -------------------------------


class Warming:
    """A float64 backend that runs first once ``skip_automatic`` has said no ``warm_up``
    times (with ``reason``), and counts what it is asked."""

    array_types = ("numpy:ndarray",)
    capabilities: Mapping[str, frozenset[str]] = {"float64": frozenset(scatterx.REDUCTIONS)}
    version = "1"
    priority = 1

    def __init__(self, name: str, reason: Callable[[str], str], warm_up: int) -> None:
        self.name, self.reason, self.warm_up = name, reason, warm_up
        self.asked = self.calls = 0

    def available(self) -> str | None:
        return None

    def can_run(self, request: Request) -> str | None:
        return None if request.dtype_key == "float64" else "serves float64 only"

    def skip_automatic(self, request: Request) -> str | None:
        self.asked += 1
        return self.reason("warming up") if self.asked <= self.warm_up else None

    def scatter_elements(self, request: ScatterRequest) -> Any:
        self.calls += 1
        from scatterx_numpy._kernel import scatter_elements

        return scatter_elements(request)


def _four_calls(backend: Warming) -> None:
    scatterx.register_backend(backend)
    for _ in range(4):
        scatterx.scatter_elements(np.zeros(4), np.array([1]), np.ones(1))


def test_a_transient_reason_is_asked_again_a_lasting_one_remembered(
    clean_selection: None,
) -> None:
    warming = Warming("warming", TransientReason, warm_up=2)
    _four_calls(warming)
    # Passed over twice, then chosen and remembered: not asked for the fourth call.
    assert (warming.asked, warming.calls) == (3, 2)
    lasting = Warming("lasting", str, warm_up=2)
    _four_calls(lasting)
    assert (lasting.asked, lasting.calls) == (1, 0)


# --- the launches a call needs, told from its metadata -----------------------------------


def _rng() -> np.random.Generator:
    return np.random.default_rng(5)


def _scatter(
    data: Any, indices: Any, axis: int, reduction: str, *, out: Any = None
) -> ScatterRequest:
    updates = _rng().random(indices.shape).astype(data.dtype)
    return normalise(data, indices, updates, axis, reduction, out)


def _square(rows: Callable[[np.ndarray], np.ndarray] = lambda i: i) -> ScatterRequest:
    indices = rows(_rng().integers(0, 300, (300, 300)))
    return _scatter(_rng().random((300, 300), dtype=np.float32), indices, 0, "add")


def _histogram(dtype: Any, reduction: str, n: int = 100_000) -> ScatterRequest:
    return _scatter(np.zeros(100, dtype), _rng().integers(0, 100, n), 0, reduction)


def _gather(data: Any, indices_shape: tuple[int, ...], axis: int, **kw: Any) -> Any:
    indices = _rng().integers(-data.shape[axis], data.shape[axis], indices_shape)
    return normalise_gather(data, indices, axis, **kw)


_F32 = np.random.default_rng(6).random((300, 200), dtype=np.float32)
_C128 = (_F32[:200, :200] + 1j * _F32[:200, :200].T).astype(np.complex128)

CASES: dict[str, Callable[[], tuple[Request, ...]]] = {
    # Whole rows or columns: the index values decide, so both are needed.
    "square, rows or columns": lambda: (_square(), _square(lambda i: i[:, :1].repeat(300, 1))),
    "axis 1, int32 indices": lambda: (
        _scatter(_F32.astype(np.float64), _rng().integers(0, 200, (150, 400), np.int32), 1, "max"),
    ),
    "1-D int64 add": lambda: (_histogram(np.int64, "add"),),
    "1-D float32 add": lambda: (_histogram(np.float32, "add"),),
    "1-D float32 add, long": lambda: (_histogram(np.float32, "add", 300_000),),
    "1-D float16 none": lambda: (_histogram(np.float16, "none"),),
    "bool, smaller indices": lambda: (
        _scatter(_F32.reshape(4, 50, 300) > 0.5, _rng().integers(0, 50, (3, 70, 40)), 1, "max"),
    ),
    "byte-swapped, F order": lambda: (
        _scatter(
            np.asfortranarray(_F32.astype(">f4")), _rng().integers(0, 200, (300, 100)), 1, "mul"
        ),
    ),
    "F order, reordered": lambda: (
        _scatter(np.asfortranarray(_F32), _rng().integers(0, 300, (250, 200)), 0, "add"),
    ),
    "F order into F out": lambda: (
        _scatter(
            f := np.asfortranarray(_F32),
            _rng().integers(0, 300, (250, 200)),
            0,
            "max",
            out=np.empty_like(f),
        ),
    ),
    "strided data": lambda: (
        _scatter(_F32[:, ::2], _rng().integers(0, 300, (250, 100)), 0, "add"),
    ),
    "a large output, copied first": lambda: (
        _scatter(
            np.zeros((1100, 1000), np.float32), _rng().integers(0, 1100, (300, 1000)), 0, "add"
        ),
        _scatter(np.zeros((1100, 1000), np.float32), np.ones((300, 1000), np.int64), 0, "add"),
    ),
    "bool in place": lambda: (
        _scatter(d := _F32 > 0.5, _rng().integers(0, 300, (300, 200)), 0, "max", out=d),
    ),
    "complex128 none": lambda: (_scatter(_C128, _rng().integers(0, 200, (200, 200)), 0, "none"),),
    "into out": lambda: (
        _scatter(_F32, _rng().integers(0, 200, (300, 200)), 1, "add", out=np.empty_like(_F32)),
    ),
    "in place": lambda: (
        _scatter(d := _F32.copy(), _rng().integers(0, 300, (300, 200)), 0, "min", out=d),
    ),
    "gather": lambda: (_gather(_F32, (500, 200), 0),),
    "gather, F order": lambda: (
        _gather(np.asfortranarray(_F32), (300, 300), 1),
        _gather(np.asfortranarray(_F32), (400, 200), 0),
    ),
    "gather, transposed 3-D": lambda: (
        _gather(_F32.reshape(40, 5, 300).transpose(2, 0, 1), (300, 40, 9), 2),
    ),
    "gather complex128 into out": lambda: (
        _gather(_C128, (300, 200), 0, out=np.empty((300, 200), np.complex128)),
    ),
    "gather bool": lambda: (_gather(_F32 > 0.5, (400, 200), 0),),
}


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, Any]]:
    """The launches calls make from now on: recorded, not run (nothing compiles)."""
    made: list[tuple[int, Any]] = []

    def record(kernel: Any, *args: Any) -> Any:
        made.append((id(kernel), _runtime.kinds(args)))
        if kernel is _runtime.pass_kernel("index_range"):
            return np.zeros((args[-1], 2), np.int64)  # in bounds
        if kernel is _runtime.pass_kernel("copy_words"):
            return None
        return np.full(args[-1], -1, np.int64)  # every task: no bad index

    monkeypatch.setattr(_runtime, "launch", record)
    return made


@pytest.fixture(params=["one thread", "every thread"])
def threads(request: pytest.FixtureRequest) -> Iterator[int]:
    before = numba.get_num_threads()
    numba.set_num_threads(1 if request.param == "one thread" else numba.config.NUMBA_NUM_THREADS)
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("case", list(CASES))
def test_the_launches_of_the_plan_are_the_launches_made(
    case: str, threads: int, launches: list[tuple[int, Any]]
) -> None:
    for request in CASES[case]():
        code = _background.code(_call.describe(request), threads)
        planned = {(id(launch.kernel()), launch.key[2]): launch for launch in code}
        before = len(launches)
        if isinstance(request, ScatterRequest):
            scatterx_numba.backend.scatter_elements(request)
        else:
            scatterx_numba.backend.gather_elements(request)
        made = set(launches[before:])
        assert made <= planned.keys(), "a launch that is not in the plan"
        # Only the index values tell whole rows from columns: one of them may not run,
        # nor then the copy or the bounds pass before it (columns check their indices in
        # their own kernel: a bounds pass there is the whole rows' alone).
        unmade = [launch for key, launch in planned.items() if key not in made]
        kernels = [launch.params[0] for launch in unmade if launch.maker == "kernel"]
        assert kernels in ([], [_views.Strategy.ROWS], [_views.Strategy.COLUMNS])
        passes = [launch.params for launch in unmade if launch.maker != "kernel"]
        assert not passes or (kernels and set(passes) <= {("copy_words",), ("index_range",)})
        assert len(passes) <= 2


# --- the background, in this process (no compile: loading is stood in for) ---------------


@pytest.fixture
def background(monkeypatch: pytest.MonkeyPatch, clean_selection: None) -> None:
    """Background mode, with no job, nothing loaded and nothing failed yet."""
    monkeypatch.setattr(_background, "_mode", "background")
    for name, fresh in (("_queue", _background.collections.deque()), ("_pending", set())):
        monkeypatch.setattr(_background, name, fresh)
    monkeypatch.setattr(_background, "_ready", set())
    monkeypatch.setattr(_background, "_failed", set())


def _big() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = _rng()
    data = rng.random((1000, 100), dtype=np.float32)
    return data, rng.integers(0, 100, (1000, 100)), rng.random((1000, 100), dtype=np.float32)


def test_explain_says_numpy_runs_while_numba_compiles(
    background: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = threading.Event()
    monkeypatch.setattr(_runtime, "load_code", lambda kernel, *args: loaded.wait(30))
    data, indices, updates = _big()
    decision = scatterx.explain(data, indices, updates, axis=1, reduction="add")
    assert decision.backend == "numpy"
    assert decision.reasons["numba"] == COMPILING
    assert f"  numba: {COMPILING}" in str(decision).splitlines()
    result = scatterx.scatter_elements(data, indices, updates, axis=1, reduction="add")
    expected = scatterx.scatter_elements(
        data, indices, updates, axis=1, reduction="add", backend="numpy"
    )
    assert result.tobytes() == expected.tobytes()
    loaded.set()
    assert _background.idle(30)
    assert scatterx.explain(data, indices, updates, axis=1, reduction="add").backend == "numba"


def test_skip_automatic_asks_for_the_launches_of_each_out_mode_and_layout(
    background: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request is passed over while any launch of its own is not loaded: with ``out``
    that the kernels write, the pass over the indices; a large new output of C-ordered
    data, the parallel copy; a gather of strided data, its kernel for that layout."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("the parallel copy needs two numba threads")
    monkeypatch.setattr(_runtime, "load_code", lambda kernel, *args: None)
    _runtime.pass_kernel("copy_words")  # numba is in: its thread count is known
    before = numba.get_num_threads()
    numba.set_num_threads(2)
    data = np.zeros((1100, 1000), np.float32)
    indices = _rng().integers(0, 1100, (300, 1000))

    def request(data: np.ndarray, **out: Any) -> ScatterRequest:
        return _scatter(data, indices, 0, "add", **out)

    def passed_over(request: Request) -> bool:
        reason = scatterx_numba.backend.skip_automatic(request)
        assert _background.idle(30)  # its job, if it started one, is done
        return reason is not None and reason.startswith("compiling float32 ")

    fortran = np.asfortranarray(data)
    try:
        assert passed_over(strided := request(np.zeros((1100, 2000), np.float32)[:, ::2]))
        assert not passed_over(strided)
        assert passed_over(new_output := request(data))  # the parallel copy
        assert not passed_over(new_output)
        # An ``out`` that the kernels cannot write as it is: a new output, then a copy.
        assert not passed_over(request(data, out=np.empty_like(fortran)))
        assert passed_over(into_out := request(data, out=np.empty_like(data)))  # the bounds
        assert not passed_over(into_out)
        assert not passed_over(request(d := data.copy(), out=d))  # in place: no copy
        # Fortran order into Fortran order runs as C order into C order: no new launch.
        assert not passed_over(request(fortran, out=np.empty_like(fortran)))
        assert passed_over(gather := _gather(_F32, (300, 300), 1))
        assert not passed_over(gather)
        assert passed_over(strided_gather := _gather(np.asfortranarray(_F32), (300, 300), 1))
        assert not passed_over(strided_gather)
    finally:
        numba.set_num_threads(before)


def test_a_failed_background_compile_is_logged_and_the_call_then_waits(
    background: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def fail(kernel: Any, *args: Any) -> None:
        msg = "no compiler here"
        raise RuntimeError(msg)

    monkeypatch.setattr(_runtime, "load_code", fail)
    request = normalise(*_big(), 1, "add")
    assert _background.compiling(request) == COMPILING
    assert _background.idle(30)
    (record,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert record.getMessage() == "numba: loading float32 add kernels failed"
    assert "no compiler here" in caplog.text
    # numba is not passed over again: the call loads its code as it runs, and raises.
    assert _background.compiling(request) is None


def test_the_compile_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_background, "_mode", None)
    monkeypatch.setenv("SCATTERX_NUMBA_COMPILE", "wait")
    assert scatterx_numba.compile_mode() == "wait"
    assert _background.compiling(normalise(*_big(), 1, "add")) is None
    monkeypatch.setenv("SCATTERX_NUMBA_COMPILE", "")
    assert scatterx_numba.compile_mode() == "background"
    monkeypatch.setenv("SCATTERX_NUMBA_COMPILE", "later")
    with pytest.raises(ValueError, match=r"must be one of background, wait .*got 'later'"):
        scatterx_numba.compile_mode()
    scatterx_numba.set_compile_mode("background")  # wins over the environment
    assert scatterx_numba.compile_mode() == "background"
    with pytest.raises(ValueError, match="got 'now'"):
        scatterx_numba.set_compile_mode("now")  # type: ignore[arg-type]


def test_a_child_forked_mid_load_leaves_numba_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("_worker", object()), ("_lock", threading.Lock())):
        monkeypatch.setattr(_background, name, value)
    monkeypatch.setattr(_background, "_queue", _background.collections.deque())
    monkeypatch.setattr(_background, "_pending", set())
    monkeypatch.setattr(_runtime, "_fork_problem", None)
    _background._after_fork_in_child()  # as in a child forked while a job ran
    reason = scatterx_numba.backend.available()
    assert reason is not None
    assert "forked while its parent loaded numba code in a background thread" in reason


# --- new processes, cold caches ----------------------------------------------------------

_CASE = """
import json, logging, sys, threading, time
import numpy as np, scatterx
from scatterx_numba import _runtime
side = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
rng = np.random.default_rng(0)
data = rng.random((side, side), dtype=np.float32)
indices = rng.integers(0, side, (side, side))
updates = rng.random((side, side), dtype=np.float32)
expected = scatterx.scatter_elements(data, indices, updates, axis=1, reduction="add",
                                     backend="numpy").tobytes()
ran = []  # (thread, backend) of each call, from the decision logged at DEBUG

class Ran(logging.Handler):
    def emit(self, record):
        backend, _, rest = record.getMessage().partition(" ")
        if rest.startswith("runs "):
            ran.append((record.threadName, backend))

logging.getLogger("scatterx").addHandler(Ran())
logging.getLogger("scatterx").setLevel(logging.DEBUG)

def call():
    out = scatterx.scatter_elements(data, indices, updates, axis=1, reduction="add")
    assert out.tobytes() == expected, "not the numpy backend's bits"

def until_numba():
    deadline = time.monotonic() + 300
    call()
    while (threading.current_thread().name, "numba") not in ran:
        assert time.monotonic() < deadline, "numba never took over"
        time.sleep(0.1)
        call()

def compiled():
    kernels = list(_runtime._found.values())
    return {"compiles": sum(sum(k.stats.cache_misses.values()) for k in kernels),
            "signatures": sum(len(k.overloads) for k in kernels)}
"""

FIRST_CALLS = """
until_numba()
reason = scatterx.explain(data, indices, updates, axis=1, reduction="add").reasons["numba"]
print(json.dumps({"ran": [backend for _, backend in ran], "reason": reason, **compiled()}))
"""

THREADS = """
import numba
start = threading.Barrier(8)
def work():
    start.wait()
    until_numba()
threads = [threading.Thread(target=work, name=f"caller-{k}") for k in range(8)]
for thread in threads: thread.start()
for thread in threads: thread.join()
firsts = {name: backend for name, backend in reversed(ran)}
print(json.dumps({"layer": numba.threading_layer(), "firsts": firsts, **compiled()}))
"""


def _run_cold(code: str, cache: Path, *argv: str, **env: str) -> Any:
    """Run ``code`` in background mode with an empty numba cache; its JSON line, parsed."""
    result = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "SCATTERX_NUMBA_COMPILE": "background",
            "NUMBA_CACHE_DIR": str(cache),
            **env,
        },
        timeout=420,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""
    return json.loads(result.stdout) if result.stdout else None


def test_the_first_call_runs_on_numpy_then_numba_takes_over(tmp_path: Path) -> None:
    seen = _run_cold(_CASE + FIRST_CALLS, tmp_path)
    assert seen["ran"][0] == "numpy"
    assert seen["ran"][-1] == "numba"
    assert set(seen["ran"]) == {"numpy", "numba"}
    assert seen["reason"] is None  # numba runs the call now
    # One signature, compiled once, in the background: numba's call compiled nothing.
    assert (seen["compiles"], seen["signatures"]) == (1, 1)


def test_eight_threads_compile_once_under_workqueue(tmp_path: Path) -> None:
    # 10,000 updates, not 1,000,000: enough for numba in automatic choice, and the callers'
    # numpy calls while it compiles cost a hundredth (in CPU the compile would share).
    seen = _run_cold(_CASE + THREADS, tmp_path, "100", NUMBA_THREADING_LAYER="workqueue")
    assert seen["layer"] == "workqueue"
    assert seen["firsts"] == {f"caller-{k}": "numpy" for k in range(8)}
    assert (seen["compiles"], seen["signatures"]) == (1, 1)


@pytest.mark.parametrize("after", [0.0, 2.0])
def test_a_process_ending_mid_compile_ends_cleanly(tmp_path: Path, after: float) -> None:
    """Ending while the daemon thread imports numba (at once) or compiles (2 s later)."""
    code = _CASE + f"call()\ntime.sleep({after})\n"
    assert _run_cold(code, tmp_path) is None
