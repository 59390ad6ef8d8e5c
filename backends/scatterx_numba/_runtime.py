"""Loading numba on first use: the on-disk cache, the kernels, the launch lock, fork."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ._views import Strategy

_load_lock = threading.Lock()
# Kernels by strategy, storage family and reduction, gather kernels by width: each is made
# (and its code loaded or compiled, one signature at a time) only when a call needs it,
# once, under _load_lock: a kernel's identity keys what is loaded (_launched).
_found: dict[tuple[Any, ...], Any] = {}
# The workqueue threading layer aborts the process when two threads launch parallel
# regions at once; until a first launch has shown the layer, every launch is serialised.
# _unguarded is read without the lock: a thread that still sees False only takes it.
_launch_lock = threading.Lock()
_unguarded = False


def _writable(folder: Path) -> bool:
    target = folder / "__pycache__"
    probe = target if target.exists() else folder
    return os.access(probe, os.W_OK | os.X_OK)


def _user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "scatterx" / "numba"


def _numba() -> Any:
    """numba, imported on first use (as Any: numba ships no types)."""
    import numba

    return numba


#: Where the kernels' modules lie: numba writes their cache beside them.
_KERNELS = Path(__file__).parent / "kernels"


def configure_cache() -> None:
    """Point numba's cache at a writable folder when the package folder is read-only.

    An explicit ``NUMBA_CACHE_DIR`` wins. Without this, an installed read-only package
    would make numba refuse ``cache=True`` for lack of a place to write. Called under
    ``_load_lock``, before each kernel is made: every thread sees one folder.
    """
    numba = _numba()
    if os.environ.get("NUMBA_CACHE_DIR") or numba.config.CACHE_DIR:
        return
    if _writable(_KERNELS):
        return
    for candidate in (_user_cache_dir(), Path(tempfile.gettempdir()) / "scatterx-numba"):
        try:
            candidate.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(candidate, os.W_OK | os.X_OK):
            numba.config.CACHE_DIR = str(candidate)
            return


def _load(key: tuple[Any, ...], make: Callable[..., Any], *args: Any) -> Any:
    """``make(*args)``, made once per ``key``; the first call imports numba (after pointing
    its cache at a writable folder).

    Found kernels are read here without a lock: a call that finds one takes no lock. One
    that does not takes it and looks again, since a thread that held it may have made that
    kernel meanwhile: one kernel per key, as its identity keys the code loaded (``launch``).
    """
    found = _found.get(key)
    if found is None:
        with _load_lock:
            found = _found.get(key)
            if found is None:
                configure_cache()
                found = _found[key] = make(*args)
    return found


def kernel(strategy: int, family: str, reduction: str) -> Any:
    """The kernel of ``strategy`` (a ``_views.Strategy``) for a storage family and reduction."""
    key = (strategy, family, reduction)
    return _load(key, _scatter_kernel, *key)


def gather_kernel(width: int) -> Any:
    """The gather kernel for elements of ``width`` words (``kernels.gather.gather_kernel``)."""
    return _load(("gather", width), _gather_kernel, width)


def pass_kernel(name: str) -> Any:
    """A parallel pass run before a kernel (``kernels.passes.index_range``, ``copy_words``)."""
    return _load(("pass", name), _pass_kernel, name)


# The makers import the kernels' modules, and numba with them, on first use only.
def _scatter_kernel(strategy: int, family: str, reduction: str) -> Any:
    from .kernels import scatter

    return scatter.scatter_kernel(Strategy(strategy), family, reduction)


def _gather_kernel(width: int) -> Any:
    from .kernels import gather

    return gather.gather_kernel(width)


def _pass_kernel(name: str) -> Any:
    from .kernels import passes

    return passes.kernel(name)


def launch(kernel: Any, *args: Any) -> Any:
    """Run ``kernel(*args)``: one process at a time where the call may compile, and one
    thread at a time while the threading layer may be ``workqueue``."""
    key = (id(kernel), kinds(args))  # kernels live as long as the process (_found)
    if key in _launched:
        return _launch(kernel, *args)
    with between_processes(compile_lock(kernel)):
        result = _launch(kernel, *args)
    _launched.add(key)
    return result


#: The bits of ``ndarray.flags.num`` that numba's type of an array depends on: C and F
#: contiguity (its layout), alignment and writability.
_FLAG_BITS = 0x1 | 0x2 | 0x100 | 0x400


def kinds(value: Any) -> Any:
    """What numba types ``value`` by, or finer: an array's dtype (its byte order too), rank,
    layout, write and alignment flags; a tuple's members; a scalar's Python type. Cheaper
    than numba's ``typeof`` of a launch's arguments: the flags as one integer, a list
    made at C speed."""
    if isinstance(value, np.ndarray):
        return value.dtype, value.ndim, value.flags.num & _FLAG_BITS
    if isinstance(value, tuple):
        return tuple([kinds(member) for member in value])
    return type(value)


#: (kernel, kinds of arguments) launched in this process: their code is loaded. Added to
#: without a lock once the code is in: two threads adding one key add the same fact, and
#: one that misses it takes the file lock, which serialises the compile (numba's own lock
#: keeps the code one).
_launched: set[tuple[int, Any]] = set()


def load_code(kernel: Any, *args: Any) -> None:
    """Load ``kernel``'s code for arguments of the kinds of ``args`` (stand-ins: see
    ``_background.code``) from numba's cache, or compile it, without running it.

    In turn with other processes, as a first launch; a later launch of arguments of these
    kinds then neither compiles nor takes the turn. numba's compiler lock keeps two
    threads from compiling one signature twice.
    """
    key = (id(kernel), kinds(args))
    if key in _launched:
        return
    numba = _numba()
    signature = tuple(numba.typeof(arg) for arg in args)
    with between_processes(compile_lock(kernel)):
        kernel.compile(signature)
    _launched.add(key)


def _launch(kernel: Any, *args: Any) -> Any:
    global _unguarded
    if _unguarded:
        return kernel(*args)
    with _launch_lock:
        result = kernel(*args)
        numba = _numba()
        _unguarded = numba.threading_layer() != "workqueue"
    return result


#: Where processes of one user take turns to compile (and save to numba's cache) code of
#: a kernel that has no cache index of its own; each index has its own (``compile_lock``).
COMPILE_LOCK = Path(tempfile.gettempdir()) / (
    f"scatterx-numba-compile-{os.getuid() if hasattr(os, 'getuid') else 'user'}.lock"
)


def compile_lock(kernel: Any) -> Path:
    """The lock file of ``kernel``'s cache index, beside :data:`COMPILE_LOCK`; that file
    itself for a kernel without one (no ``cache=True``, a stand-in).

    Only processes writing one index race (see :func:`between_processes`): two kernels, or
    one kernel cached in two folders (two checkouts), compile at once, as two pytest-xdist
    workers on two cores then do.
    """
    index = getattr(
        getattr(getattr(kernel, "_cache", None), "_cache_file", None), "_index_path", None
    )
    if index is None:
        return COMPILE_LOCK
    digest = hashlib.sha1(str(index).encode()).hexdigest()[:16]
    return COMPILE_LOCK.with_name(f"{COMPILE_LOCK.stem}-{digest}{COMPILE_LOCK.suffix}")


@contextlib.contextmanager
def between_processes(lock: Path | None = None) -> Iterator[None]:
    """Hold the file lock ``lock`` (by default :data:`COMPILE_LOCK`) that processes take in
    turn to compile, or load, the code of one kernel.

    numba saves a cache entry by reading the index file, adding the entry and writing it
    back, with no lock: two processes compiling two specialisations of one kernel at once
    (pytest-xdist workers, Dask workers) can leave an entry naming the other's code, and a
    later process then loads a ``min`` kernel that computes ``max``. Loading and compiling
    in turn keeps the index whole. (Without ``fcntl``, on Windows, there is no turn.)
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(COMPILE_LOCK if lock is None else lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def num_threads() -> int:
    """Threads numba uses in this thread (``set_num_threads``, ``NUMBA_NUM_THREADS``).

    Once numba's threads are started, read as ``numba.get_num_threads`` reads it, without
    its start-up check: that takes two locks, a tenth of the interpreter's work for an
    in-place call once the kernel has evicted it from the caches.
    """
    # A look in sys.modules, not an import (which would import numba): a module another
    # thread is still importing has no started threads yet, so _is_initialized is absent or
    # False there, and numba is asked, whole.
    parallel: Any = sys.modules.get("numba.np.ufunc.parallel")
    if parallel is not None and getattr(parallel, "_is_initialized", False):
        read = getattr(parallel, "_get_num_threads", None)
        found = int(read()) if read is not None else 0
        if found > 0:
            return found
    numba = _numba()
    return int(numba.get_num_threads())


def loaded_num_threads() -> int | None:
    """:func:`num_threads` once a kernel is made here (numba is imported), else None:
    asking then would import numba."""
    return num_threads() if _found else None


# ---- fork ---------------------------------------------------------------------------
# A forked child inherits numba's threading layer in the state the parent left it. GNU
# OpenMP cannot start its threads again in a child: numba terminates the child at its
# first parallel launch. The workqueue and tbb layers can, once the child's copies of our
# locks (possibly held by a parent thread that does not exist in the child) are new.
_fork_problem: str | None = None


def fork_problem() -> str | None:
    """Why numba's parallel kernels cannot run in this (forked) process, or None."""
    return _fork_problem


def _inherited_layer_problem() -> str | None:
    """In a forked child: whether the parent had started numba's threads on GNU OpenMP.

    A look in ``sys.modules``: importing here could wait forever for the lock of a module
    that a thread of the parent, absent here, was importing at the fork. Such a numba,
    partly imported, lacks ``threading_layer``, and its threads never started.
    """
    numba: Any = sys.modules.get("numba")
    threading_layer = getattr(numba, "threading_layer", None)
    if threading_layer is None:
        return None
    try:
        layer = threading_layer()
    except ValueError:  # numba's threads never started in the parent
        return None
    omppool: Any = sys.modules.get("numba.np.ufunc.omppool")
    if layer != "omp" or getattr(omppool, "openmp_vendor", "GNU") != "GNU":
        return None
    return (
        "this process was forked from one whose numba threads run on GNU OpenMP, which "
        "cannot start again in a forked child (numba would end the process); the numpy "
        "backend serves it. To keep numba in child processes, start them with the "
        "'forkserver' or 'spawn' method, or set NUMBA_THREADING_LAYER=workqueue (or tbb)"
    )


def refuse_after_fork(reason: str) -> None:
    """In a forked child: numba's kernels cannot run in this process, for ``reason``."""
    global _fork_problem
    _fork_problem = _fork_problem or reason


def _after_fork_in_child() -> None:
    global _launch_lock, _load_lock, _fork_problem
    _launch_lock = threading.Lock()
    _load_lock = threading.Lock()
    if _fork_problem is None:
        _fork_problem = _inherited_layer_problem()


def _imported_in_a_forked_worker() -> str | None:
    """When this module is first imported in a multiprocessing child (fork start method)
    whose parent had started numba's threads without scatterx: the handler above was not
    registered there, but the inherited state tells the same."""
    import multiprocessing

    if multiprocessing.parent_process() is None:
        return None
    if multiprocessing.get_start_method(allow_none=True) in ("spawn", "forkserver"):
        return None  # a fresh interpreter: numba's threads, if started, started here
    return _inherited_layer_problem()


os.register_at_fork(after_in_child=_after_fork_in_child)
_fork_problem = _imported_in_a_forked_worker()
