"""A result's buffer given beforehand: the XLA FFI target lends XLA's to the backend's call.

While :func:`results_into` holds a buffer, the first :func:`scatterx.backend.empty_aligned`
of its shape and dtype in this context returns it instead of new memory, so a backend
that makes its result there writes straight into XLA's result buffer, with the
semantics of a new result (no ``out=``: nothing to keep as it was when the call fails).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import numpy as np

_LENT: ContextVar[list[np.ndarray[Any, Any]] | None] = ContextVar("scatterx_result", default=None)


@contextlib.contextmanager
def results_into(buffer: np.ndarray[Any, Any]) -> Iterator[None]:
    """Lend ``buffer`` (C-ordered, writable) to the first result of its shape and dtype."""
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
    buffer = found[0]
    if buffer.shape != shape or buffer.dtype != dtype:
        return None
    found.clear()
    return buffer
