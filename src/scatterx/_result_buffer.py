"""A result's buffer given beforehand: the XLA FFI target lends XLA's to the backend's call.

While :func:`results_into` holds a buffer, the first :func:`scatterx.backend.empty_aligned`
of its shape and dtype in this context returns it instead of new memory, so a backend
that makes its result there writes straight into XLA's result buffer, with the
semantics of a new result (no ``out=``: nothing to keep as it was when the call fails).

XLA's CPU buffers are fresh memory on every call, and a large one faults in 4 KiB page by
page as the kernel writes it: on last-axis-sparse (a 32 MiB result) 8,193 faults a call,
which took 2.5x the CPU time of the whole call on NumPy arrays. NumPy asks Linux for
transparent huge pages under its own large arrays (``madvise(MADV_HUGEPAGE)`` from 4 MiB);
:func:`results_into` asks the same for a large lent buffer, and the faults drop to 17
(528 while only the buffer's own whole 2 MiB pages were advised).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import mmap
import sys
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import numpy as np

_LENT: ContextVar[list[np.ndarray[Any, Any]] | None] = ContextVar("scatterx_result", default=None)


@contextlib.contextmanager
def results_into(buffer: np.ndarray[Any, Any]) -> Iterator[None]:
    """Lend ``buffer`` (C-ordered, writable) to the first result of its shape and dtype."""
    advise_huge_pages(buffer)
    token = _LENT.set([buffer])
    try:
        yield
    finally:
        _LENT.reset(token)


def lent(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray[Any, Any] | None:
    """The lent buffer if it has ``shape`` and ``dtype`` (taken: once only), else None."""
    found = _LENT.get()
    if not found:
        return None
    try:
        buffer = found[0]
    except IndexError:  # taken meanwhile
        return None
    if buffer.shape != shape or buffer.dtype != dtype:
        return None
    # Taken by one pop: threads whose contexts were copied from this one share the list,
    # and a look then a clear could give the buffer to two of them.
    try:
        return found.pop()
    except IndexError:
        return None


#: From this size a lent buffer is given huge pages, as NumPy does for its own arrays.
HUGE_PAGES_FROM_BYTES = 1 << 22
#: The size of a transparent huge page on x86-64 and arm64 Linux.
HUGE_PAGE = 1 << 21
#: The size of a base page, the unit in which memory is mapped.
PAGE = mmap.PAGESIZE
_MADV_HUGEPAGE = 14


def advise_huge_pages(buffer: np.ndarray[Any, Any]) -> None:
    """Ask Linux for transparent huge pages under the whole 2 MiB pages of the pages of a
    large ``buffer`` not written yet, so that writing it faults once per 2 MiB, not 4 KiB.

    The buffer's ends are first rounded out to its whole 4 KiB pages (memory that is mapped
    wherever the buffer is): XLA's 32 MiB buffer starts 64 bytes into a mapping of glibc's
    that ends on a 2 MiB boundary 4,032 bytes after the buffer, and its last 2 MiB faulted
    page by page (512 of the call's 528 faults on last-axis-sparse) until they counted.
    Advice only: where the kernel has no huge pages (another system, THP ``never``) the
    call fails quietly and nothing changes; the memory and its contents are untouched.
    """
    if buffer.nbytes < HUGE_PAGES_FROM_BYTES:
        return
    madvise = _madvise()
    if madvise is None:
        return
    address = buffer.ctypes.data
    first = address // PAGE * PAGE
    last = -(-(address + buffer.nbytes) // PAGE) * PAGE
    start = -(-first // HUGE_PAGE) * HUGE_PAGE
    end = last // HUGE_PAGE * HUGE_PAGE
    if end > start:
        madvise(start, end - start, _MADV_HUGEPAGE)


# No lock: two threads that both miss each get a function set up in full, and either
# is kept; libc's madvise is the same function.
@functools.cache
def _madvise() -> Callable[[int, int, int], int] | None:
    """libc's ``madvise`` on Linux, else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    function.restype = ctypes.c_int
    return function
