"""The registry of backends: discovery through entry points, and what it remembers.

The registry is an immutable snapshot of the backends, with the choices made among them
attached to it: registering a backend installs a new snapshot, so no remembered choice
can outlive the set of backends it was made among.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from ._dtypes import REDUCTIONS
from ._protocol import Backend
from ._request import Request, ScatterRequest
from .libraries.base import Route

ENTRY_POINT_GROUP = "scatterx.backends"
#: How many automatic choices one registry remembers before it forgets them all.
MAX_REMEMBERED = 1024

EntryPoints = Callable[[], Iterable[EntryPoint]]


@dataclass(eq=False)
class Registry:
    """The registered backends in priority order, and the choices remembered among them.

    Attributes
    ----------
    backends : dict
        Name -> backend, in priority order.
    serving : dict
        Array type -> the backends that serve it, in priority order.
    choices : dict
        ``request.key`` -> the backend automatic choice picked for that metadata, and
        the DLPack route to it (None where it serves the arrays natively).
    """

    backends: dict[str, Backend]
    serving: dict[type, tuple[Backend, ...]] = field(default_factory=dict)
    choices: dict[Hashable, tuple[Backend, Route | None]] = field(default_factory=dict)

    @classmethod
    def of(cls, found: Iterable[Backend]) -> Registry:
        """A registry of ``found``, ordered by priority, then name."""
        ordered = sorted(found, key=lambda b: (b.priority, b.name))
        return cls({b.name: b for b in ordered})

    def serving_type(self, array: Any) -> tuple[Backend, ...]:
        """The backends that serve ``array``'s type, in priority order."""
        found = self.serving.get(type(array))
        if found is None:
            found = tuple(b for b in self.backends.values() if serves(b, array))
            self.serving[type(array)] = found
        return found

    def remember(self, key: Hashable, choice: tuple[Backend, Route | None]) -> None:
        """Remember an automatic choice; past ``MAX_REMEMBERED`` choices, start afresh."""
        if len(self.choices) >= MAX_REMEMBERED:
            self.choices.clear()
        self.choices[key] = choice


def serves(backend: Backend, array: Any) -> bool:
    """Whether ``backend`` declares ``array``'s type among its ``array_types``."""
    return any(array_type_matches(array, spec) for spec in backend.array_types)


_MEMBERS = (
    "name",
    "array_types",
    "priority",
    "capabilities",
    "version",
    "available",
    "can_run",
    "scatter_elements",
)


def is_backend(obj: object) -> bool:
    """Whether ``obj`` has every member of :class:`Backend`.

    Looked up statically: ``isinstance(obj, Backend)`` would evaluate properties such as
    ``version``, which may fail while the backend's library is missing.
    """
    return all(_has_static(obj, member) for member in _MEMBERS)


def _has_static(obj: object, member: str) -> bool:
    try:
        inspect.getattr_static(obj, member)
    except AttributeError:
        return False
    return True


class _BrokenBackend:
    """Stands in for an entry point that failed to load, so it is listed, never run."""

    array_types: tuple[str, ...] = ()
    priority = sys.maxsize
    capabilities: Mapping[str, frozenset[str]] = {}
    version = "unknown"

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self._reason = reason

    def available(self) -> str | None:
        return self._reason

    def can_run(self, request: Request) -> str | None:
        return self._reason

    def scatter_elements(self, request: ScatterRequest) -> Any:
        raise RuntimeError(self._reason)


def _load_entry_point(ep: EntryPoint) -> Backend:
    try:
        obj = ep.load()
    except Exception as exc:  # a broken third-party backend must never break import
        return _BrokenBackend(ep.name, f"entry point {ep.value!r} failed to load: {exc!r}")
    if not is_backend(obj):
        return _BrokenBackend(ep.name, f"entry point {ep.value!r} is not a Backend")
    backend: Backend = obj
    if backend.name != ep.name:
        why = f"entry point {ep.name!r} names a backend called {backend.name!r}"
        return _BrokenBackend(ep.name, why)
    return backend


def _installed() -> Iterable[EntryPoint]:
    return entry_points(group=ENTRY_POINT_GROUP)


def _discover(found: EntryPoints) -> Registry:
    return Registry.of(_load_entry_point(ep) for ep in found())


_lock = threading.Lock()
_current: Registry | None = None


def current() -> Registry:
    """The registry of this process: entry points are loaded on first use."""
    registry = _current
    if registry is None:
        registry = _install(lambda: _discover(_installed), only_if_empty=True)
    return registry


def _install(make: Callable[[], Registry], *, only_if_empty: bool = False) -> Registry:
    global _current
    with _lock:
        if _current is None or not only_if_empty:
            _current = make()
        return _current


def registered() -> Mapping[str, Backend]:
    """Name -> backend object, in priority order."""
    return current().backends


def register_backend(backend: Backend) -> None:
    """Add ``backend`` to the registry of this process (tests, notebooks, plugins).

    Installed backends are found through the ``scatterx.backends`` entry point; this is
    for one that is not installed. It replaces a registered backend of the same name.

    Parameters
    ----------
    backend : Backend
        An object with the members of :class:`scatterx.backend.Backend`.

    Raises
    ------
    TypeError
        When ``backend`` lacks a member of the protocol.
    """
    if not is_backend(backend):
        msg = f"register_backend needs an object with the Backend members, got {backend!r}"
        raise TypeError(msg)
    current()
    _install(lambda: Registry.of({**registered(), backend.name: backend}.values()))


@contextlib.contextmanager
def scoped_registry(*extra: Backend, entry_points: EntryPoints | None = None) -> Iterator[Registry]:
    """A registry of the installed backends (or of ``entry_points``) and ``extra``, for a while.

    On exit the registry before it comes back, with everything it remembered.

    Parameters
    ----------
    *extra : Backend
        Backends to register too (they replace installed ones of the same name).
    entry_points : callable, optional
        Returns the entry points to load instead of the installed ``scatterx.backends``.

    Yields
    ------
    Registry
        The registry in force inside the block.
    """
    before = current()
    found = entry_points or _installed

    def make() -> Registry:
        loaded = _discover(found).backends
        return Registry.of({**loaded, **{b.name: b for b in extra}}.values())

    try:
        yield _install(make)
    finally:
        _install(lambda: before)


def _forget_choices() -> None:
    """In a forked child, decide afresh: a backend the parent could run may not run here.

    No lock is taken: the child has one thread, and the parent's may have held it.
    """
    global _current, _lock
    _lock = threading.Lock()
    if _current is not None:
        _current = Registry(dict(_current.backends))


# numba's OpenMP threads, for one, cannot start again in a forked child.
os.register_at_fork(after_in_child=_forget_choices)


@dataclass(frozen=True)
class BackendRecord:
    """What ``scatterx.backends()`` says about one registered backend.

    Attributes
    ----------
    name : str
        The backend's name.
    available : bool
        Whether it can run at all in this process.
    reason : str or None
        Why not, when it cannot.
    array_types : tuple of str
        The array types it serves, as ``"module:qualname"``.
    capabilities : Mapping of str to frozenset of str
        dtype key -> the reductions it computes.
    version : str or None
        The version of the library doing the work, when available.
    priority : int
        Lower runs first in automatic choice.
    """

    name: str
    available: bool
    reason: str | None
    array_types: tuple[str, ...]
    capabilities: Mapping[str, frozenset[str]] = field(repr=False)
    version: str | None
    priority: int

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtype keys served, for at least one reduction."""
        return tuple(k for k, v in self.capabilities.items() if v)

    @property
    def reductions(self) -> tuple[str, ...]:
        """Reductions served for at least one dtype, in the contract's order."""
        served: set[str] = set().union(*self.capabilities.values())
        return tuple(r for r in REDUCTIONS if r in served)


def _availability(backend: Backend) -> str | None:
    try:
        return backend.available()
    except Exception as exc:  # available() of a third-party backend must not break listing
        return f"available() raised {exc!r}"


def backend_record(backend: Backend) -> BackendRecord:
    """Describe one backend object."""
    reason = _availability(backend)
    try:
        version = backend.version if reason is None else None
    except Exception:
        version = None
    return BackendRecord(
        name=backend.name,
        available=reason is None,
        reason=reason,
        array_types=tuple(backend.array_types),
        capabilities=dict(backend.capabilities),
        version=version,
        priority=backend.priority,
    )


def backends() -> list[BackendRecord]:
    """List every registered backend, available or not, in priority order.

    Returns
    -------
    list of BackendRecord
        One record per backend.

    Examples
    --------
    >>> import scatterx
    >>> [b.name for b in scatterx.backends() if b.name == "numpy"]
    ['numpy']
    """
    return [backend_record(b) for b in registered().values()]


def array_type_matches(array: Any, spec: str) -> bool:
    """Whether ``array`` is an instance of the ``"module:qualname"`` type ``spec``.

    Looks in ``sys.modules`` only: a library that is not imported cannot have made the array.
    One that another thread is still importing may lack the type yet; then ``array``, made
    by a finished type, is not one of it either.
    """
    module_name, _, qualname = spec.partition(":")
    obj: Any = sys.modules.get(module_name)
    if obj is None:
        return False
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return isinstance(array, obj)
