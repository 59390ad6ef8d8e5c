"""The memory of results: XLA's buffers lent to a call, huge pages, and large ones kept."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import mmap
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import numpy as np

# --- A lent buffer ------------------------------------------------------------------------
# While results_into holds a buffer (the XLA FFI target lends XLA's result buffer), the
# first scatterx.backend.empty_aligned of its shape and dtype in this context returns it
# instead of new memory: the backend writes straight into XLA's result, with the semantics
# of a new result (no out=: nothing to keep as it was when the call fails).

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


# --- Huge pages ---------------------------------------------------------------------------
# XLA's CPU buffers are fresh memory on every call, and a large one faults in 4 KiB page
# by page as the kernel writes it: on last-axis-sparse (a 32 MiB result) 8,193 faults a
# call, 2.5x the CPU time of the whole call on NumPy arrays. NumPy asks Linux for
# transparent huge pages under its own arrays from 4 MiB (madvise(MADV_HUGEPAGE));
# results_into asks the same for a large lent buffer, and the faults drop to 17 (528 while
# only the buffer's own whole 2 MiB pages were advised).

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


# --- The pool of large results ------------------------------------------------------------
# glibc maps every allocation over its mmap threshold (which stops growing at 32 MiB)
# anew, and the call that writes it pays a fault per page and the kernel's zeroing (2.5 ms
# of a 5 ms last-axis-sparse call; docs/performance.md, "Fresh results"). So buffer()
# holds the buffers of the last KEEP large results, and gives one whose results have all
# been dropped to the next result of its size, its pages already mapped: at most
# SCATTERX_RESULT_POOL_BYTES (default 256 MiB) held in all; a larger result gets new
# memory and is not held; 0 holds none.
#
# When a held buffer is free: the pool keeps the array that owns the memory to itself,
# and lends an array whose base is a ctypes array over that memory, the lease. The lease
# is no ndarray, so every NumPy view of the lent array, of any depth, stops its base chain
# at the lent array and never reaches the owner; a torch tensor, a memoryview or a DLPack
# capsule made from any of them holds one of those arrays. So every user of the memory
# keeps the lease alive, and the lease holds nothing that shares the memory but ctypes'
# _objects (there for debugging). A weak reference to the lease is dead exactly when the
# last user is gone: the language's promise, with or without the GIL, where reference
# counts promise nothing.

#: The environment variable capping the bytes held, and its default.
ENV_VAR = "SCATTERX_RESULT_POOL_BYTES"
DEFAULT_BYTES = 1 << 28
#: The buffers held at most: a result and the one before it, as a loop alternates them.
KEEP = 2


def _never_lent() -> None:
    return None


class Held:
    """A buffer of the pool: the array that owns its memory, and its lease if given out."""

    __slots__ = ("_lease", "_lease_type", "memory")

    def __init__(self, nbytes: int) -> None:
        #: Allocated by NumPy: its huge-page advice and its alignment, as any array's.
        self.memory = np.empty(nbytes, np.uint8)
        self._lease_type = ctypes.c_uint8 * nbytes
        self._lease: Callable[[], object] = _never_lent

    def free(self) -> bool:
        """Whether nothing uses the memory: its last lease, if any, is gone."""
        return self._lease() is None

    def lend(self) -> np.ndarray[Any, Any]:
        """The memory as a new uint8 array whose users all hold a new lease."""
        lease = self._lease_type.from_buffer(self.memory.data)  # keeps the memory alive
        self._lease = weakref.ref(lease)
        # A ctypes array exports a writable buffer; NumPy's stubs list no ctypes type.
        array: np.ndarray[Any, Any] = np.frombuffer(lease, np.uint8)  # type: ignore[call-overload]
        return array


_LOCK = threading.Lock()
_HELD: list[Held] = []


def _new_lock_in_child() -> None:
    # A fork while another thread held the lock would leave the child's copy held forever.
    global _LOCK
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


def limit() -> int:
    """The bytes the pool may hold (``SCATTERX_RESULT_POOL_BYTES``); ValueError if unreadable."""
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        return DEFAULT_BYTES
    try:
        bytes_ = int(value)
    except ValueError:
        bytes_ = -1
    if bytes_ < 0:
        msg = f"{ENV_VAR} must be a number of bytes, 0 or more; got {value!r}"
        raise ValueError(msg)
    return bytes_


def buffer(nbytes: int) -> np.ndarray[Any, Any]:
    """``nbytes`` of uninitialised uint8 memory: a held buffer of that size that no array
    uses any more, else a new one, held while it fits the limit."""
    cap = limit()
    if nbytes > cap:
        return np.empty(nbytes, np.uint8)
    with _LOCK:  # the look for a free buffer and its lending, one step
        return (_free(nbytes) or _hold(nbytes, cap)).lend()


def _free(nbytes: int) -> Held | None:
    """A held buffer of ``nbytes`` that nothing uses, now the most recently given."""
    for position, held in enumerate(_HELD):
        if held.memory.nbytes == nbytes and held.free():
            _HELD.append(_HELD.pop(position))
            return held
    return None


def _hold(nbytes: int, cap: int) -> Held:
    """A new buffer, held: the oldest let go while more than ``KEEP`` or ``cap`` are held
    (their memory stays the results' that still use it, freed with the last)."""
    new = Held(nbytes)
    _HELD.append(new)
    while len(_HELD) > KEEP or sum(held.memory.nbytes for held in _HELD) > cap:
        del _HELD[0]
    return new


def release() -> int:
    """Let go of every buffer held (memory still used by results stays theirs); the bytes
    held before."""
    with _LOCK:
        held = sum(kept.memory.nbytes for kept in _HELD)
        _HELD.clear()
    return held
