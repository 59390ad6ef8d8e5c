"""The Backend interface and discovery of backends through entry points."""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from ._request import ScatterRequest

ENTRY_POINT_GROUP = "scatterx.backends"
DEFAULT_PRIORITY = 50


@runtime_checkable
class Backend(Protocol):
    """What a backend provides; the entry point's object must have these members.

    Attributes
    ----------
    name
        Unique, lower-case name used by ``backend=``, ``use_backend`` and the env var.
    array_types
        The array types served, as ``"module:qualname"`` strings, so that matching an
        array never imports a library.
    priority
        Lower runs first in automatic choice among backends serving the same type.
    capabilities
        dtype key (see contract.md section 3) -> reductions the backend computes.
    version
        The version of the library doing the work (numpy, numba, cupy).

    Optional members, looked up with ``getattr``:

    ``skip_automatic(request) -> str | None``
        A reason to pass the call over in *automatic* choice only (for instance:
        too small to be worth it); a backend named explicitly still runs.

    ``can_run`` and ``skip_automatic`` may look only at the request's metadata (array
    type, dtypes, shapes, axis, reduction, device), never at values: automatic choices are
    remembered by that metadata.
    ``from_numpy(array)`` / ``to_numpy(array)``
        Move test data to and from the backend's array type (the conformance suite).
    """

    name: str
    array_types: tuple[str, ...]
    priority: int
    capabilities: Mapping[str, frozenset[str]]

    @property
    def version(self) -> str: ...

    def available(self) -> str | None:
        """Return None when usable, else why not (package missing, no device). Cached."""
        ...

    def can_run(self, request: ScatterRequest) -> str | None:
        """Return None when this backend can compute ``request``, else why not."""
        ...

    def scatter_elements(self, request: ScatterRequest) -> Any:
        """Compute the result of ``request`` as a new array."""
        ...


@dataclass(frozen=True)
class BackendRecord:
    """What ``scatterx.backends()`` says about one registered backend."""

    name: str
    available: bool
    reason: str | None
    array_types: tuple[str, ...]
    capabilities: Mapping[str, frozenset[str]] = field(repr=False)
    version: str | None
    priority: int

    @property
    def dtypes(self) -> tuple[str, ...]:
        """dtype keys served, for at least one reduction."""
        return tuple(k for k, v in self.capabilities.items() if v)

    @property
    def reductions(self) -> tuple[str, ...]:
        """Reductions served for at least one dtype, in the contract's order."""
        from ._dtypes import REDUCTIONS

        served = set().union(*self.capabilities.values()) if self.capabilities else set()
        return tuple(r for r in REDUCTIONS if r in served)


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


def is_backend(obj: Any) -> bool:
    """Whether ``obj`` has every member of :class:`Backend`.

    Looked up statically: ``isinstance(obj, Backend)`` would evaluate properties such as
    ``version``, which may fail while the backend's library is missing.
    """
    return all(_has_static(obj, member) for member in _MEMBERS)


def _has_static(obj: Any, member: str) -> bool:
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

    def can_run(self, request: ScatterRequest) -> str | None:
        return self._reason

    def scatter_elements(self, request: ScatterRequest) -> Any:
        raise RuntimeError(self._reason)


_lock = threading.Lock()
_backends: dict[str, Any] | None = None


def _load_entry_point(ep: Any) -> Any:
    try:
        obj = ep.load()
    except Exception as exc:  # a broken third-party backend must never break import
        return _BrokenBackend(ep.name, f"entry point {ep.value!r} failed to load: {exc!r}")
    if not is_backend(obj):
        return _BrokenBackend(ep.name, f"entry point {ep.value!r} is not a Backend")
    if obj.name != ep.name:
        why = f"entry point {ep.name!r} names a backend called {obj.name!r}"
        return _BrokenBackend(ep.name, why)
    return obj


def registered() -> dict[str, Any]:
    """Name -> backend object, loaded from entry points once, in priority order."""
    global _backends
    if _backends is None:
        with _lock:
            if _backends is None:
                found = [_load_entry_point(ep) for ep in entry_points(group=ENTRY_POINT_GROUP)]
                found.sort(key=lambda b: (b.priority, b.name))
                _backends = {b.name: b for b in found}
    return _backends


def register_backend(backend: Any) -> None:
    """Add ``backend`` to the registry of this process (tests, notebooks, plugins).

    Installed backends are found through the ``scatterx.backends`` entry point; this is
    for one that is not installed. It replaces a registered backend of the same name.
    """
    if not is_backend(backend):
        msg = f"register_backend needs an object with the Backend members, got {backend!r}"
        raise TypeError(msg)
    current = dict(registered())
    current[backend.name] = backend
    ordered = sorted(current.values(), key=lambda b: (b.priority, b.name))
    global _backends
    with _lock:
        _backends = {b.name: b for b in ordered}
    from ._select import clear_cache

    clear_cache()


def _availability(backend: Any) -> str | None:
    try:
        return backend.available()  # type: ignore[no-any-return]
    except Exception as exc:  # available() of a third-party backend must not break listing
        return f"available() raised {exc!r}"


def backend_record(backend: Any) -> BackendRecord:
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
