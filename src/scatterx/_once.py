"""What is made on first use, made once under a lock (contract section 13)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Once(Generic[T]):
    """``make()``'s value, made by the first call and kept: a thread that comes while it is
    being made waits for it, and every thread gets the same value."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._value: T | None = None

    def __call__(self) -> T:
        value = self._value
        if value is None:
            with self._lock:
                value = self._value
                if value is None:
                    value = self._value = self._make()
        return value
