"""The decision: one candidate loop, native first, for named and automatic choice alike.

Every registered backend is asked the same way (:class:`_Asker`): one that serves the
call's array type is asked about the call itself; one that serves the carrier type that
DLPack takes the arrays to is asked about the carried call, carried at most once per
decision and handed on to the run in the :class:`Plan`. :func:`decide` runs on it,
:class:`Decision` explains it by asking the other backends the same questions.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from ._config import Configured, Names, configured
from ._errors import BackendError
from ._protocol import Backend, SkipsAutomatic, TransientReason
from ._registry import current, registered, serves
from ._request import Request
from .libraries import route_for
from .libraries.base import Route

logger = logging.getLogger("scatterx")


class Plan(tuple[Backend, "Route | None", Request]):
    """The backend that runs a call, the route to it, and the request it runs:
    ``(backend, route, request)``.

    A plain tuple with named members, made at every call (docs/performance.md: the small
    call).

    Attributes
    ----------
    backend : Backend
        The backend chosen.
    route : Route or None
        How the caller's arrays reach it; None when it serves them natively.
    request : Request
        The request as the backend receives it: carried by ``route`` where there is one.
    """

    __slots__ = ()

    @property
    def backend(self) -> Backend:
        """The backend chosen."""
        return self[0]

    @property
    def route(self) -> Route | None:
        """How the caller's arrays reach the backend; None: natively."""
        return self[1]

    @property
    def request(self) -> Request:
        """The request as the backend receives it."""
        return self[2]


class Carried(tuple[Route, tuple[Any, ...]]):
    """Arrays carried before their request was made (CPU tensors' NumPy views):
    ``(route, arrays)``, a tuple with named members (made at C speed).

    Attributes
    ----------
    route : Route
        The route they took, and the result goes back by.
    arrays : tuple of array
        The caller's arrays, as :attr:`Request.arrays` orders them.
    """

    __slots__ = ()

    # Read at C speed (no Python frame): ``route`` is asked at every small call.
    route: Route = property(itemgetter(0), doc="The route the arrays took.")  # type: ignore[assignment]
    arrays: tuple[Any, ...] = property(itemgetter(1), doc="The caller's arrays.")  # type: ignore[assignment]

    def caller(self, request: Request) -> Request:
        """``request`` (of the carried arrays) on the caller's arrays: what it describes."""
        return request.with_arrays(self.arrays, self.route.source, self.route.device)


class _Asker:
    """Asks backends whether they run one call; the DLPack carry is made at most once."""

    def __init__(self, request: Request, automatic: bool, carried: Carried | None = None) -> None:
        self.automatic = automatic
        self._carried: tuple[Route, Request | str] | str | None = None
        self.request = request
        if carried is not None:  # ``request`` is of the carried arrays
            self._carried = carried.route, request
            self.request = carried.caller(request)

    def carried(self) -> tuple[Route, Request | str] | str:
        """The route and the carried request (or why DLPack cannot carry it); or why there
        is no route at all."""
        if self._carried is None:
            route = route_for(self.request)
            if isinstance(route, Route):
                self._carried = route, _carry(route, self.request)
            else:
                self._carried = route or ""
        return self._carried

    def ask(self, backend: Backend) -> tuple[str | None, Route | None, Request]:
        """Why ``backend`` does not (or, in automatic choice, should not) run the call, the
        route it would run it by, and the request it would receive."""
        request = self.request
        if serves(backend, request.data):
            return why_not_served(backend, request, self.automatic), None, request
        served = ", ".join(backend.array_types) or "nothing"
        carried = self.carried()
        if isinstance(carried, str):  # no route: the Decision says why, once
            return f"does not serve {request.array_type} (serves {served})", None, request
        route, carried_request = carried
        if route.carrier not in backend.array_types:
            why = f"does not serve {request.array_type}, nor {route.carrier} that DLPack"
            return f"{why} carries it to (serves {served})", None, request
        if isinstance(carried_request, str):
            return carried_request, None, request
        return why_not_served(backend, carried_request, self.automatic), route, carried_request


def _carry(route: Route, request: Request) -> Request | str:
    """``request`` carried by ``route``, or why DLPack cannot carry it (a dtype, say).

    Arrays the library refuses (a sparse torch tensor) raise its TypeError.
    """
    route.library.refuse(*request.arrays)
    try:
        return route.carry(request)
    except (TypeError, ValueError, RuntimeError, BufferError) as exc:
        what = f"{request.array_type} {request.dtype_key}"
        return f"DLPack cannot carry {what} to {route.carrier}: {exc}"


def why_not_served(backend: Backend, request: Request, automatic: bool) -> str | None:
    """Why ``backend``, which serves the request's array type, does not run it; or None."""
    reason = backend.available()
    if reason is None and not callable(getattr(backend, request.operation, None)):
        reason = f"has no {request.operation}"
    if reason is None:
        reason = backend.can_run(request)
    if reason is None and automatic and isinstance(backend, SkipsAutomatic):
        reason = backend.skip_automatic(request)
    return reason


def decision_key(request: Request) -> Hashable | None:
    """What an automatic choice is remembered by: the metadata with the arrays' layout
    (``request.key``) and the out mode (another array, or data in place) with out's
    layout, which a backend's choice of kernels (and so whether they are compiled yet)
    may depend on."""
    key, out = request.key, request.out
    if key is None or out is None:
        return key
    return key, out is request.data, getattr(out, "strides", None)


def _automatic(asker: _Asker) -> tuple[Plan | None, bool]:
    """The first backend in priority order that serves, can run and does not skip the
    call, natively first, then through the DLPack route; and whether that may be
    remembered (no backend before it passed the call over for a TransientReason)."""
    registry, request = current(), asker.request
    lasting = True
    for backend in registry.serving_type(request.data):
        why = why_not_served(backend, request, automatic=True)
        if why is None:
            return Plan((backend, None, request)), lasting
        lasting = lasting and not isinstance(why, TransientReason)
    carried = asker.carried()
    if isinstance(carried, str):
        return None, lasting
    route, carried_request = carried
    if isinstance(carried_request, str):
        return None, lasting
    for backend in registry.serving_type(carried_request.data):
        why = why_not_served(backend, carried_request, automatic=True)
        if why is None:
            return Plan((backend, route, carried_request)), lasting
        lasting = lasting and not isinstance(why, TransientReason)
    return None, lasting


def _remembered(
    request: Request, carried: Carried | None, key: Hashable | None, found: Any
) -> Plan | None:
    """The automatic choice of ``request``, remembered by its :func:`decision_key` (``key``,
    where it has one: ``found`` is what is remembered there); a remembered choice holds no
    arrays: they are carried anew.

    Arrays carried before the request was made are remembered as what they are: the
    carrier's, whose choice is the one their carried request gets.
    """
    registry = current()
    if found is not None:
        backend, route = found
        if carried is not None:
            return Plan((backend, carried.route, request))
        return Plan((backend, route, request if route is None else route.carry(request)))
    plan, lasting = _automatic(_Asker(request, True, carried))
    if key is not None and plan is not None and lasting:
        registry.remember(key, (plan.backend, None if carried else plan.route))
    return plan


def _named(request: Request, names: Names, carried: Carried | None) -> Plan | None:
    """The first of ``names`` that can run ``request``, natively or by its route."""
    known, asker = registered(), _Asker(request, False, carried)
    for name in names:
        why, route, asked = asker.ask(known[name])
        if why is None:
            return Plan((known[name], route, asked))
    return None


def decide(request: Request, choice: Configured, carried: Carried | None = None) -> Plan:
    """The plan of ``request``; raise BackendError, with every backend's reason, if none.

    ``carried``: how the arrays of ``request`` were carried from the caller's before the
    request was made (CPU tensors' NumPy views); the decision describes the caller's.
    """
    if choice.names is None:
        key = request.key if request.out is None else decision_key(request)
        found = None if key is None else current().choices.get(key)
        if found is not None and found[1] is None:  # native to the request: the small call's way
            plan: Plan | None = Plan((found[0], carried and carried.route, request))
        else:
            plan = _remembered(request, carried, key, found)
    else:
        plan = _named(request, choice.names, carried)
    if plan is None or logger.isEnabledFor(logging.DEBUG):
        decision = Decision.of(request, plan, choice, carried)
        if plan is None:
            raise BackendError(str(decision))
        logger.debug("%s", decision)
    return plan


def decide_for_blocks(request: Request) -> Plan:
    """The plan of an in-memory call a backend of chunked arrays makes from a task.

    The configured choice (``use_backend``, ``set_backend``, ``SCATTERX_BACKEND``) holds
    where it names backends that serve the blocks' type; where it names none (it names the
    chunked backend itself, say), automatic priority decides. ``backend=`` of the user's
    call chose the chunked backend and does not reach its tasks.
    """
    choice = configured(None)
    if choice.names is not None:
        known = registered()
        serving = tuple(name for name in choice.names if serves(known[name], request.data))
        if serving:
            return decide(request, Configured(serving, choice.source))
    return decide(request, Configured(None, "automatic priority"))


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
        cls, request: Request, plan: Plan | None, choice: Configured, carried: Carried | None = None
    ) -> Decision:
        """Explain a plan of :func:`decide`: each other backend's reason.

        Parameters
        ----------
        request : Request
            The call, on the caller's arrays or on their views carried early (``carried``).
        plan : Plan or None
            The plan decided on.
        choice : Configured
            The names the choice was made among, and where they came from.
        carried : Carried, optional
            How the caller's arrays were carried before ``request`` was made.

        Returns
        -------
        Decision
            The decision, with every backend's reason.
        """
        shown = request if carried is None else carried.caller(request)
        name = route = None
        if plan is not None:
            name = plan.backend.name
            if plan.route is not None:
                copies = None if carried else plan.route.library.copies(shown)
                route = str(plan.route._replace(copies=copies))
        else:
            found = route_for(shown)
            route = f"none: {found}" if isinstance(found, str) else None
        reasons = _reasons(request, name, choice, carried)
        return cls(name, choice.source, describe(shown), reasons, route)

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
    request: Request, chosen: str | None, choice: Configured, carried: Carried | None
) -> dict[str, str | None]:
    """Why each registered backend other than ``chosen`` does not run ``request`` (of the
    caller's arrays, or carried from them by ``carried``).

    The chosen one comes first among those that can (priority, or the order named), so any
    other that could run comes after it.
    """
    known, names = registered(), choice.names
    asker = _Asker(request, names is None, carried)
    order = list(known) if names is None else [*names, *(n for n in known if n not in names)]
    reasons: dict[str, str | None] = {}
    for name in order:
        if name == chosen:
            reasons[name] = None
        elif names is not None and name not in names:
            reasons[name] = f"not named by {choice.source}"
        else:
            why = asker.ask(known[name])[0]
            reasons[name] = why if why is not None else f"could run, but {chosen} comes first"
    return reasons


def describe(request: Request) -> str:
    """The call of ``request`` in one line."""
    dtype = getattr(request.data, "dtype", "?")
    out = request.out
    into = "" if out is None else ", out=data" if out is request.data else ", out=another array"
    return (
        f"{request.operation}({request.array_type} {dtype} {request.shape}, "
        f"indices {request.index_shape}, {request.settings}{into})"
    )


def explain_plan(request: Request, backend: Any, carried: Carried | None = None) -> Decision:
    """The Decision for a validated request; runs nothing."""
    choice = configured(backend)
    if choice.names is None:
        key = request.key if request.out is None else decision_key(request)
        found = None if key is None else current().choices.get(key)
        plan = _remembered(request, carried, key, found)
    else:
        plan = _named(request, choice.names, carried)
    return Decision.of(request, plan, choice, carried)
