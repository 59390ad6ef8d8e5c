"""Compiling in the background: automatic choice leaves a call to numpy until its code is in.

The first call of a kind costs seconds of numba's compiler (or a few hundred milliseconds
from its disk cache), which the numpy backend does not: it answers in milliseconds with the
same bits. So in automatic choice a call whose code is not loaded in this process yet
is passed over (:func:`compiling` gives the reason, marked transient so that the choice
is not remembered), while one daemon thread loads or compiles exactly the code that call
needs: the launches of its plan (:mod:`scatterx_numba.plan.launch`). Once it is in, calls of
that kind run on numba.

``SCATTERX_NUMBA_COMPILE=wait`` (or :func:`set_compile_mode`) turns this off: automatic
choice then runs numba and the call waits for the compile, as a call naming numba always
does. Benchmarks and the test suite use it.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
from functools import lru_cache
from typing import Any, Literal, NamedTuple

import numpy as np

from scatterx.backend import ElementsRequest, TransientReason

from . import _runtime
from .plan import call as _call
from .plan import launch as _launch

ENV_VAR = "SCATTERX_NUMBA_COMPILE"
#: Seconds a job waits before it starts: importing numba holds the interpreter's lock for
#: long stretches, which the call that asked for the job, running on numpy meanwhile,
#: would feel (a 1,000,000-update float32 add: 25-30 ms slower, from 25 ms).
START_DELAY = 0.1
#: How a call that automatic choice would give numba meets code not yet loaded: it runs on
#: numpy while the code loads in the background, or it waits for it.
CompileMode = Literal["background", "wait"]
MODES: tuple[CompileMode, ...] = ("background", "wait")

logger = logging.getLogger("scatterx")

# One reference, set and read whole: no lock needed.
_mode: CompileMode | None = None


def set_compile_mode(mode: CompileMode | None) -> None:
    """Set how automatic choice meets numba code that is not loaded yet, for every thread.

    Parameters
    ----------
    mode : {"background", "wait"} or None
        ``"background"``: the call runs on numpy while numba loads (or compiles) its code
        in a background thread; later calls of that kind run on numba. ``"wait"``: the
        call runs on numba and waits for its code, as a call naming numba always does
        (benchmarks: they time compiled code). None: as ``SCATTERX_NUMBA_COMPILE`` says,
        by default ``"background"``.

    Examples
    --------
    >>> import scatterx_numba
    >>> scatterx_numba.set_compile_mode("wait")
    >>> scatterx_numba.compile_mode()
    'wait'
    >>> scatterx_numba.set_compile_mode(None)
    """
    global _mode
    if mode is not None and mode not in MODES:
        msg = f"set_compile_mode takes one of {', '.join(map(repr, MODES))} or None; got {mode!r}"
        raise ValueError(msg)
    _mode = mode


def compile_mode() -> CompileMode:
    """The mode in force: :func:`set_compile_mode`'s, else ``SCATTERX_NUMBA_COMPILE``'s.

    Returns
    -------
    {"background", "wait"}
        The mode.

    Raises
    ------
    ValueError
        When ``SCATTERX_NUMBA_COMPILE`` names neither mode.
    """
    if _mode is not None:
        return _mode
    env = os.environ.get(ENV_VAR, "").strip()
    for mode in MODES:
        if env == mode:
            return mode
    if not env:
        return "background"
    msg = f"{ENV_VAR} must be one of {', '.join(MODES)} (or unset); got {env!r}"
    raise ValueError(msg)


class _Job(NamedTuple):
    """Load the code of calls like ``call`` on ``threads`` (None: numba's default)."""

    call: _call.Call
    threads: int | None


# The queue, the jobs in it or running, and the one worker: read and changed under _lock
# only, so that each job is queued once and one worker runs while any job is left.
_lock = threading.Lock()
_queue: collections.deque[_Job] = collections.deque()
_pending: set[_Job] = set()
_worker: threading.Thread | None = None
#: Keys (``Code.key``) of the code loaded by a job: calls needing only these run. Added
#: to by the worker once the code is in, read by callers without the lock: a caller that
#: misses a key just added queues a job that finds it loaded.
_ready: set[tuple[object, ...]] = set()
#: Calls whose code failed to load in the background (or whose launches could not be
#: told): numba runs them as it would without jobs, loading their code, raising the error.
#: Added to without the lock: adding a call twice is adding it once.
_failed: set[_call.Call] = set()


class Code(NamedTuple):
    """The code of one launch: the kernel's maker and parameters, stand-ins of the
    arguments, and ``key``: the kernel and the kinds of its arguments (equal keys, one
    compiled signature; what ``_runtime.launch`` remembers as loaded)."""

    maker: str
    params: tuple[Any, ...]
    args: tuple[Any, ...]
    key: tuple[Any, ...]

    def kernel(self) -> Any:
        """The kernel (the first one made in a process imports numba)."""
        return getattr(_runtime, self.maker)(*self.params)


def _stand_in(arg: Any) -> Any:
    """A small argument of the kinds of ``arg`` (``plan.call.Arg``, tuples of them, scalars):
    its lengths cut to 2, since a C-ordered array's flags depend only on which lengths are
    0, 1 or more; a strided one of the C and F flags it names; named tuples as the plain
    tuples the kernels are launched with."""
    if isinstance(arg, _call.Arg):
        if arg.flags is not None:
            return _strided(arg.dtype, *arg.flags)
        array = np.empty(tuple(min(int(n), 2) for n in arg.shape), arg.dtype)
        array.flags.writeable = arg.writeable
        return array
    if isinstance(arg, tuple):
        return tuple(_stand_in(member) for member in arg)
    return arg


def _strided(dtype: np.dtype[Any], c: bool, f: bool) -> np.ndarray[Any, Any]:
    """A read-only 3-D array with the C and F flags ``c`` and ``f``."""
    if c:
        array = np.empty((1, 1, 1) if f else (2, 2, 2), dtype)
    elif f:
        array = np.empty((2, 2, 2), dtype, order="F")
    else:
        array = np.empty((2, 2, 4), dtype)[..., ::2]
    array.flags.writeable = False
    return array


# No lock: a pure function of its arguments, so two threads that both miss make equal
# answers, and either is kept.
@lru_cache(maxsize=256)
def code(call: _call.Call, threads: int) -> tuple[Code, ...]:
    """The code of every launch ``call`` may make on ``threads`` (``plan.launch.launches``)."""
    found = []
    for launch in _launch.launches(call, threads):
        args = _stand_in(launch.args)
        key = (launch.maker, launch.params, _runtime.kinds(args))
        found.append(Code(launch.maker, launch.params, args, key))
    return tuple(found)


def compiling(request: ElementsRequest) -> TransientReason | None:
    """Why automatic choice should leave ``request`` to another backend for now, or None.

    In background mode, while the code ``request`` needs is not loaded, it starts a job
    loading it (once per kind of call) and says so. None once the code is in, in wait
    mode, and for calls whose code failed to load in the background: those then load it
    as they run, and raise the error (it was logged when it happened).
    """
    if compile_mode() == "wait":
        return None
    call = _call.describe(request)
    if call in _failed:
        return None
    threads = _runtime.loaded_num_threads()
    if threads is not None and _loaded(call, threads):
        return None
    if not _submit(_Job(call, threads)):
        return None
    return TransientReason(f"compiling {call.what} kernels in the background; numpy runs meanwhile")


def _loaded(call: _call.Call, threads: int) -> bool:
    """Whether every launch of ``call`` is loaded; a failure to tell counts as failing to
    load (logged: it is a bug), so that the call runs on numba as it would without jobs."""
    try:
        needs = code(call, threads)
    except Exception:
        logger.warning("numba: which %s kernels to load is unknown", call.what, exc_info=True)
        _failed.add(call)
        return True
    return all(need.key in _ready for need in needs)


def _submit(job: _Job) -> bool:
    """Queue ``job`` (once), starting the worker where none runs; False where no thread
    can start (the interpreter is ending)."""
    global _worker
    with _lock:
        if job in _pending:
            return True
        if _worker is None:
            worker = threading.Thread(target=_work, name="scatterx-numba-compile", daemon=True)
            try:
                worker.start()
            except RuntimeError:
                return False
            _worker = worker
        _pending.add(job)
        _queue.append(job)
    return True


def _work() -> None:
    """Run the jobs in turn (numba compiles one signature at a time anyway), then end."""
    global _worker
    time.sleep(START_DELAY)
    while True:
        with _lock:
            if not _queue:
                _worker = None
                return
            job = _queue.popleft()
        try:
            _load(job)
        except Exception:
            # Not raised here, where nobody would see it: the next call of this kind
            # loads the code as it runs, and raises it there.
            logger.warning("numba: loading %s kernels failed", job.call.what, exc_info=True)
            _failed.add(job.call)
        finally:
            with _lock:
                _pending.discard(job)


def _load(job: _Job) -> None:
    """Load (or compile) each launch of ``job``'s calls that is not loaded yet."""
    threads = job.threads if job.threads is not None else _runtime.num_threads()
    for need in code(job.call, threads):
        if need.key in _ready:
            continue
        start = time.perf_counter()
        _runtime.load_code(need.kernel(), *need.args)
        _ready.add(need.key)
        seconds = time.perf_counter() - start
        logger.debug("numba: %s kernel %s loaded in %.2f s", job.call.what, need.params, seconds)


def idle(timeout: float | None = None) -> bool:
    """Wait until no job is pending or running, at most ``timeout`` seconds; whether so."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with _lock:
            worker = _worker
        if worker is None:
            return True
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        worker.join(left)


def _after_fork_in_child() -> None:
    """A job running in the parent may hold numba's or the import system's locks, which no
    thread of the child will release: numba does not run in such a child."""
    global _lock, _worker
    busy = _worker is not None
    _lock, _worker = threading.Lock(), None
    _queue.clear()
    _pending.clear()
    if busy:
        _runtime.refuse_after_fork(
            "this process was forked while its parent loaded numba code in a background "
            "thread, whose locks no thread of this process can release; the numpy backend "
            f"serves it. To keep numba here, fork after that (or set {ENV_VAR}=wait)"
        )


os.register_at_fork(after_in_child=_after_fork_in_child)
