"""Backend choice: backend=, use_backend(), set_backend(), SCATTERX_BACKEND, priority."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from ._errors import BackendError
from ._interop import Route, route_for
from ._protocol import Backend, GathersElements, SkipsAutomatic, TransientReason
from ._registry import Registry, current, registered, serves
from ._request import GatherRequest, Request

ENV_VAR = "SCATTERX_BACKEND"
logger = logging.getLogger("scatterx")

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


def _configured(backend: object) -> tuple[Names | None, str]:
    """The names asked for and where they came from, by contract.md section 5's precedence."""
    if backend is not None:
        return _names(backend, "backend="), "backend="
    scoped = _scoped.get()
    if scoped is not None:
        return scoped, "use_backend"
    process = _process_default
    if process is not None:
        return process, "set_backend"
    env = os.environ.get(ENV_VAR)
    # A value that names no backend ("", " ", ",") leaves the choice automatic.
    names = [n.strip() for n in env.split(",") if n.strip()] if env else None
    if names:
        return _names(names, ENV_VAR), ENV_VAR
    return None, "automatic priority"


Choice = tuple[Backend, Route | None]


def _why_not(
    backend: Backend, request: Request, automatic: bool
) -> tuple[str | None, Route | None]:
    """Why ``backend`` cannot (or, in automatic choice, should not) run ``request``, and
    the route it would run it by (None: natively)."""
    if serves(backend, request.data):
        return _why_not_served(backend, request, automatic), None
    served = ", ".join(backend.array_types) or "nothing"
    route = route_for(request)
    if isinstance(route, Route):
        if route.carrier in backend.array_types:
            carried = _carried(route, request)
            if isinstance(carried, str):
                return carried, None
            return _why_not_served(backend, carried, automatic), route
        why = f"does not serve {request.array_type}, nor {route.carrier} that DLPack carries it to"
        return f"{why} (serves {served})", None
    # No route: the Decision says why, once.
    return f"does not serve {request.array_type} (serves {served})", None


def _carried(route: Route, request: Request) -> Request | str:
    """``request`` carried by ``route``, or why DLPack cannot carry it (a dtype, say).

    Arrays the library refuses (a sparse torch tensor) raise its TypeError.
    """
    route.library.refuse(*request.arrays)
    try:
        return route.carry(request)
    except (TypeError, ValueError, RuntimeError, BufferError) as exc:
        what = f"{request.array_type} {request.dtype_key}"
        return f"DLPack cannot carry {what} to {route.carrier}: {exc}"


def _why_not_served(backend: Backend, request: Request, automatic: bool) -> str | None:
    """As _why_not, for a backend known to serve the array type."""
    reason = backend.available()
    if (
        reason is None
        and isinstance(request, GatherRequest)
        and not isinstance(backend, GathersElements)
    ):
        reason = "has no gather_elements"
    if reason is None:
        reason = backend.can_run(request)
    if reason is None and automatic and isinstance(backend, SkipsAutomatic):
        reason = backend.skip_automatic(request)
    return reason


def _automatic(request: Request) -> Choice | None:
    """The first backend in priority order that serves, can run and does not skip ``request``.

    Backends serving the array type natively come first; then, through a DLPack route,
    those serving the carrier type. Remembered by ``request.key``: the metadata that is all
    that ``can_run`` and ``skip_automatic`` may look at (see :class:`scatterx.backend.Backend`),
    unless a backend before it passed the call over for a
    :class:`~scatterx.backend.TransientReason`: that one is asked again next time.
    """
    registry = current()
    key = request.key
    found = None if key is None else registry.choices.get(key)
    if found is None:
        found, lasting = _first_automatic(registry, request)
        if key is not None and found is not None and lasting:
            registry.remember(key, found)
    return found


def _first_automatic(registry: Registry, request: Request) -> tuple[Choice | None, bool]:
    """The choice of :func:`_automatic`, and whether it may be remembered."""
    lasting = True
    for backend in registry.serving_type(request.data):
        why = _why_not_served(backend, request, automatic=True)
        if why is None:
            return (backend, None), lasting
        lasting = lasting and not isinstance(why, TransientReason)
    route = route_for(request)
    if not isinstance(route, Route):
        return None, lasting
    carried = _carried(route, request)
    if isinstance(carried, str):
        return None, lasting
    for backend in registry.serving_type(carried.data):
        why = _why_not_served(backend, carried, automatic=True)
        if why is None:
            return (backend, route), lasting
        lasting = lasting and not isinstance(why, TransientReason)
    return None, lasting


Names = tuple[str, ...]


def _decide(
    request: Request, backend: str | Sequence[str] | None
) -> tuple[Choice | None, str, Names | None]:
    """The one decision: the backend that runs ``request`` and its route (or None), where
    the choice came from, and the names it was made among (None: automatic priority).

    :func:`choose` runs on it and :func:`explain_request` explains it: the reasons are
    derived from the decision, never decided again.
    """
    names, source = _configured(backend)
    if names is None:
        return _automatic(request), source, None
    known = registered()
    for name in names:
        why, route = _why_not(known[name], request, automatic=False)
        if why is None:
            return (known[name], route), source, names
    return None, source, names


def choose(request: Request, backend: str | Sequence[str] | None = None) -> Choice:
    """Return the backend that runs ``request`` and its route; raise BackendError if none can."""
    chosen, source, names = _decide(request, backend)
    if chosen is None or logger.isEnabledFor(logging.DEBUG):
        decision = Decision.of(request, chosen, source, names)
        if chosen is None:
            raise BackendError(str(decision))
        logger.debug("%s", decision)
    return chosen


def choose_for_blocks(request: Request) -> Choice:
    """The backend that runs an in-memory call a backend of chunked arrays makes from a task.

    The configured choice (``use_backend``, ``set_backend``, ``SCATTERX_BACKEND``) holds
    where it names backends that serve the blocks' type; where it names none (it names the
    chunked backend itself, say), automatic priority decides. ``backend=`` of the user's
    call chose the chunked backend and does not reach its tasks.
    """
    names, _ = _configured(None)
    if names is not None:
        known = registered()
        serving = tuple(name for name in names if serves(known[name], request.data))
        if serving:
            return choose(request, serving)
    chosen = _automatic(request)
    if chosen is None:
        raise BackendError(str(Decision.of(request, None, "automatic priority", None)))
    return chosen


@dataclass(frozen=True)
class Decision:
    """Which backend a call would run on, and why each other backend would not.

    ``str()`` reads one line per backend.

    Attributes
    ----------
    backend : str or None
        The backend that runs the call, or None when none can.
    source : str
        Where the choice came from: ``"backend="``, ``"use_backend"``, ``"set_backend"``,
        ``"SCATTERX_BACKEND"`` or ``"automatic priority"``.
    call : str
        The call, described.
    reasons : dict of str to str or None
        Each registered backend's reason not to run the call (None for the one that runs).
    route : str or None
        How the arrays reach the backend that runs, when it does not serve their type
        natively, e.g. ``"torch:Tensor (cpu) -> numpy:ndarray by DLPack, no copy"``; or,
        when no backend runs, ``"none: "`` and why no route reaches one.
    """

    backend: str | None
    source: str
    call: str
    reasons: dict[str, str | None]
    route: str | None = None

    @classmethod
    def of(
        cls, request: Request, chosen: Choice | None, source: str, names: Names | None
    ) -> Decision:
        """Explain a decision of :func:`_decide`: each other backend's reason.

        Parameters
        ----------
        request : ScatterRequest or GatherRequest
            The call.
        chosen : tuple of (Backend, Route or None), or None
            The backend decided on, and its route.
        source : str
            Where the choice came from.
        names : tuple of str or None
            The names the choice was made among; None for automatic priority.

        Returns
        -------
        Decision
            The decision, with every backend's reason.
        """
        name = route = None
        if chosen is not None:
            name = chosen[0].name
            if chosen[1] is not None:
                route = str(chosen[1]._replace(copies=chosen[1].library.copies(request)))
        else:
            found = route_for(request)
            route = f"none: {found}" if isinstance(found, str) else None
        reasons = _reasons(request, name, source, names)
        return cls(name, source, _describe(request), reasons, route)

    def __str__(self) -> str:
        if self.backend is None:
            head = f"no backend can run {self.call} (choice by {self.source})"
        else:
            head = f"{self.backend} runs {self.call} (choice by {self.source})"
        lines = [head]
        if self.route is not None:
            runs = "" if self.backend is None else f"; {self.backend} runs"
            lines.append(f"  route: {self.route}{runs}")
        for name, reason in self.reasons.items():
            lines.append(f"  {name}: {'runs' if name == self.backend else reason}")
        return "\n".join(lines)


def _reasons(
    request: Request, chosen: str | None, source: str, names: tuple[str, ...] | None
) -> dict[str, str | None]:
    """Why each registered backend other than ``chosen`` does not run ``request``.

    The chosen one comes first among those that can (priority, or the order named), so any
    other that could run comes after it.
    """
    known = registered()
    automatic = names is None
    order = list(known) if names is None else [*names, *(n for n in known if n not in names)]
    reasons: dict[str, str | None] = {}
    for name in order:
        if name == chosen:
            reasons[name] = None
        elif names is not None and name not in names:
            reasons[name] = f"not named by {source}"
        else:
            why, _ = _why_not(known[name], request, automatic)
            reasons[name] = why if why is not None else f"could run, but {chosen} comes first"
    return reasons


def _describe(request: Request) -> str:
    dtype = getattr(request.data, "dtype", "?")
    call = (
        f"{request.operation}({request.array_type} {dtype} {request.shape}, "
        f"indices {request.index_shape}, axis={request.axis}"
    )
    if isinstance(request, GatherRequest):
        return f"{call})"
    return f"{call}, reduction={request.reduction!r})"


def explain_request(request: Request, backend: str | Sequence[str] | None = None) -> Decision:
    """The Decision for a validated request; runs nothing."""
    return Decision.of(request, *_decide(request, backend))
