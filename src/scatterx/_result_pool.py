"""The memory of large results, kept for the next result of its size.

glibc gives a freed array's memory to the next allocation up to its mmap threshold, which
stops growing at 32 MiB; above that every new array is mapped anew, and the call that
writes it pays a page fault per page and the kernel's zeroing of it (2.5 ms of a 5 ms
last-axis-sparse call, a 32 MiB result; docs/performance.md, "Fresh results"). So
:func:`scatterx.backend.empty_aligned` takes the buffers of its large results from here:
the last ``KEEP`` of them are held, and one whose results have all been dropped is given
to the next result of the same size, its pages already mapped.

A buffer is free when nothing but this module refers to it. Every array that shares its
memory refers to it (NumPy's views all have it as their ``base``; a torch tensor, a
memoryview or a DLPack capsule made from one of them holds that array), so its reference
count says so exactly; the lock makes taking it one step. The buffers held, free or not,
are at most ``SCATTERX_RESULT_POOL_BYTES`` (default 256 MiB) in all; a larger result
gets new memory and is not held; 0 holds none.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import numpy as np

#: The environment variable capping the bytes held, and its default.
ENV_VAR = "SCATTERX_RESULT_POOL_BYTES"
DEFAULT_BYTES = 1 << 28
#: The buffers held at most: a result and the one before it, as a loop alternates them.
KEEP = 2

_LOCK = threading.Lock()
_HELD: list[np.ndarray[Any, Any]] = []


def _new_lock_in_child() -> None:
    # A fork while another thread held the lock would leave the child's copy held forever.
    global _LOCK
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


def _references(held: list[np.ndarray[Any, Any]], position: int) -> int:
    return sys.getrefcount(held[position])


#: What :func:`_references` counts for a buffer only the list holds (interpreters differ).
_UNUSED = _references([np.empty(1, np.uint8)], 0)
#: Reference counts say who holds a buffer only under the GIL.
_COUNTS_ARE_EXACT = getattr(sys, "_is_gil_enabled", lambda: True)()


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
    if nbytes > cap or not _COUNTS_ARE_EXACT:
        return np.empty(nbytes, np.uint8)
    with _LOCK:
        for position in range(len(_HELD)):
            if _HELD[position].nbytes == nbytes and _references(_HELD, position) == _UNUSED:
                found = _HELD.pop(position)
                _HELD.append(found)  # the most recently given last
                return found
        new = np.empty(nbytes, np.uint8)
        _HELD.append(new)
        while len(_HELD) > KEEP or sum(held.nbytes for held in _HELD) > cap:
            del _HELD[0]  # an array still using it keeps it alive; freed with the last
        return new


def release() -> int:
    """Let go of every buffer held (memory still used by results stays theirs); the bytes
    held before."""
    with _LOCK:
        held = sum(kept.nbytes for kept in _HELD)
        _HELD.clear()
    return held
