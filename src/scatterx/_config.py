"""Where a call's backend choice comes from: backend=, use_backend, set_backend, the env."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import NamedTuple

from ._registry import registered

ENV_VAR = "SCATTERX_BACKEND"

_scoped: ContextVar[tuple[str, ...] | None] = ContextVar("scatterx_backend", default=None)
_process_lock = threading.Lock()
_process_default: tuple[str, ...] | None = None


def _names(choice: object, where: str) -> tuple[str, ...]:
    """The names of a choice, checked: a name or a sequence of registered names."""
    given: tuple[object, ...] = ()
    if isinstance(choice, str):
        given = (choice,)
    elif isinstance(choice, Sequence):
        given = tuple(choice)
    names = tuple(n for n in given if isinstance(n, str))
    if not names or len(names) != len(given):
        msg = f"{where} takes a backend name or a sequence of names; got {choice!r}"
        raise TypeError(msg)
    known = registered()
    for name in names:
        if name not in known:
            msg = f"unknown backend {name!r} in {where}; registered backends: {', '.join(known)}"
            raise ValueError(msg)
    return names


@contextlib.contextmanager
def use_backend(backend: str | Sequence[str]) -> Iterator[None]:
    """Run the calls inside the ``with`` block on ``backend`` (a name or names tried in order).

    Nestable; the innermost wins. It is per thread and per asyncio task (a ContextVar),
    and ``backend=`` on a call still wins over it.

    Parameters
    ----------
    backend : str or sequence of str
        A registered backend's name, or names tried in order.

    Yields
    ------
    None
        Inside the block, calls choose among ``backend``.

    Examples
    --------
    >>> import numpy as np, scatterx
    >>> with scatterx.use_backend("numpy"):
    ...     scatterx.scatter_elements(np.zeros(3), np.array([1]), np.array([5.0]))
    array([0., 5., 0.])
    """
    token = _scoped.set(_names(backend, "use_backend"))
    try:
        yield
    finally:
        _scoped.reset(token)


def set_backend(backend: str | Sequence[str] | None) -> None:
    """Set the process-wide backend choice, seen by every thread.

    Parameters
    ----------
    backend : str or sequence of str or None
        A registered backend's name, or names tried in order; None restores automatic
        choice.
    """
    global _process_default
    names = None if backend is None else _names(backend, "set_backend")
    with _process_lock:
        _process_default = names


Names = tuple[str, ...]


class Configured(NamedTuple):
    """The backend names a call chooses among, and where they came from.

    Attributes
    ----------
    names : tuple of str or None
        The names, tried in order; None for automatic priority.
    source : str
        ``"backend="``, ``"use_backend"``, ``"set_backend"``, ``"SCATTERX_BACKEND"`` or
        ``"automatic priority"``.
    """

    names: Names | None
    source: str


AUTOMATIC = Configured(None, "automatic priority")


def configured(backend: object) -> Configured:
    """The names asked for and where they came from, by contract.md section 5's precedence.

    A :class:`Configured` passes through: a call made on another's behalf (a gradient, a
    host callback) keeps the choice, and its source, of the call it serves.
    """
    if backend is None:
        scoped = _scoped.get()
        if scoped is not None:
            return Configured(scoped, "use_backend")
        process = _process_default
        if process is not None:
            return Configured(process, "set_backend")
        env = os.environ.get(ENV_VAR)
        # A value that names no backend ("", " ", ",") leaves the choice automatic.
        names = [n.strip() for n in env.split(",") if n.strip()] if env else None
        if names:
            return Configured(_names(names, ENV_VAR), ENV_VAR)
        return AUTOMATIC
    if type(backend) is Configured:
        return backend
    return Configured(_names(backend, "backend="), "backend=")
