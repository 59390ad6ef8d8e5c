"""Adopt a call's arrays once: their library, and CPU tensors carried early to NumPy views.

Everything after reads the one :class:`Adopted` value: the check takes its arrays, the run
its carry, and the hand-back its library. Threads (contract section 13): ``_EARLY``
remembers an answer that depends on its key alone; two threads that miss at once compute
equal answers, and one dict store wins whole, so it is read and filled without a lock.
"""

from __future__ import annotations

from typing import Any

from . import _registry
from ._plan import Carried
from .libraries import library_of
from .libraries.base import Library, Route


class Adopted(tuple[tuple[Any, ...], "Library | None", "Carried | None"]):
    """A call's arrays as the pipeline takes them: ``(arrays, library, carried)``, a
    tuple with named members.

    Attributes
    ----------
    arrays : tuple of array
        What the request is made of: the caller's arrays, or their NumPy views.
    library : Library or None
        The caller's array library; None for NumPy arrays and array-likes.
    carried : Carried or None
        How the arrays were carried to their NumPy views, where they were.
    """

    __slots__ = ()

    @property
    def arrays(self) -> tuple[Any, ...]:
        """What the request is made of."""
        return self[0]

    @property
    def library(self) -> Library | None:
        """The caller's array library; None for NumPy's."""
        return self[1]

    @property
    def carried(self) -> Carried | None:
        """How the arrays were carried early, where they were."""
        return self[2]


def adopt(arrays: tuple[Any, ...], out: Any = None) -> Adopted:
    """Find the library of a call's arrays (one lookup by type, remembered), and carry CPU
    tensors to their NumPy views where that gives the decision the DLPack route would give,
    only sooner.

    That is so for a library whose conversion itself proves the arrays fit the NumPy
    route (torch's ``Tensor.numpy()`` takes CPU tensors only, and fails for every flag
    that needs a check or a copy), when no backend serves the library natively: the
    route's decision is then the one made among the backends of NumPy arrays, on the
    carried arrays' metadata, which cost less to check. A call with ``out`` is never
    carried early: its request holds the caller's arrays, ``out`` among them.
    """
    kind = type(arrays[0])
    if out is not None:
        return Adopted((arrays, library_of(kind), None))
    known = _EARLY.get(kind)
    if known is None or known[0] is not _registry.current():
        known = _EARLY[kind] = _early_of(kind, arrays[0])
    library, route = known[1], known[2]
    if route is None or type(arrays[1]) is not kind or type(arrays[-1]) is not kind:
        return Adopted((arrays, library, None))
    carried = library.early(arrays)  # type: ignore[misc, union-attr]
    if carried is None:
        return Adopted((arrays, library, None))
    return Adopted((carried, library, Carried((route, arrays))))


#: By array type: the registry asked, the library, and the route of arrays carried early
#: (None where they are not: no library, no early carry, or a backend serves the type).
_EARLY: dict[type, tuple[_registry.Registry, Library | None, Route | None]] = {}


def _early_of(kind: type, array: Any) -> tuple[_registry.Registry, Library | None, Route | None]:
    registry = _registry.current()
    library = library_of(kind)
    if library is None or library.early is None or registry.serving_type(array):
        return registry, library, None
    return registry, library, library.early_route(kind)
