"""Sharing a process's cores between Dask's task threads and numba's threads.

Dask runs several tasks at once in one process (the threaded scheduler: one thread per
core; a ``distributed`` worker: ``nthreads`` threads); numba, asked by each of them, would
start a team of threads per core for every task: cores x cores threads. Instead, the tasks
of one process share its cores as tokens. A task about to launch numba takes every token
that is free (at least one, waiting for it), runs numba with that many threads, and gives
them back. One large block then runs on every core, and many blocks run side by side, one
core each once they queue up; no more numba threads run than the process has cores.

The cores of a process: a ``distributed`` worker's ``nthreads`` (what the cluster gave it);
else numba's thread count (``NUMBA_NUM_THREADS``, by default the cores this process may
use). The multiprocessing scheduler starts processes that do not know of each other: set
``NUMBA_NUM_THREADS`` there.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any


def loaded_distributed() -> Any:
    """``distributed``, whole, where this process imported it (or is importing it); else
    None: a program that never used it does not pay for its import here.

    ``sys.modules`` lists a module from the start of its import, and another thread may
    still be running it, its names not all defined yet: importing it then waits, under the
    import system's lock of that module, and returns it whole.
    """
    if "distributed" not in sys.modules:
        return None
    try:
        return importlib.import_module("distributed")
    except ImportError:  # the other thread's import failed: no cluster here
        return None


def process_cores() -> int:
    """The cores the tasks of this process share (see the module's text)."""
    distributed = loaded_distributed()
    if distributed is not None:
        try:
            return max(1, int(distributed.get_worker().state.nthreads))
        except ValueError:  # not in a worker
            pass
    numba: Any = importlib.import_module("numba")
    return max(1, int(numba.config.NUMBA_NUM_THREADS))


class CoreShare:
    """The cores of a process as tokens: see the module's text."""

    def __init__(self, cores: Callable[[], int] = process_cores) -> None:
        self._count = cores
        self._free: int | None = None
        self._changed = threading.Condition()

    @contextlib.contextmanager
    def take(self) -> Iterator[int]:
        """Take every free core (at least one, waiting for it); yield how many."""
        with self._changed:
            if self._free is None:  # counted once, by the first task, under the lock
                self._free = self._count()
            while self._free < 1:
                self._changed.wait()
            taken, self._free = self._free, 0
        try:
            yield taken
        finally:
            with self._changed:
                self._free += taken
                self._changed.notify_all()


SHARE = CoreShare()


def run_on_numba(run: Callable[[], Any]) -> Any:
    """``run()``, a numba call, on the cores this task can take now."""
    numba: Any = importlib.import_module("numba")
    with SHARE.take() as cores:
        before = numba.get_num_threads()
        numba.set_num_threads(min(cores, numba.config.NUMBA_NUM_THREADS))
        try:
            return run()
        finally:
            numba.set_num_threads(before)
