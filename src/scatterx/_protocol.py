"""The Backend protocol: what every backend provides, and what some may add."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ._request import GatherNDRequest, GatherRequest, Request, ScatterNDRequest, ScatterRequest


class Backend(Protocol):
    """What a backend provides; the entry point's object must have these members.

    Members: ``name``, unique and lower case, used by ``backend=``, ``use_backend`` and the
    environment variable; ``array_types``, the array types served as ``"module:qualname"``
    strings, so that matching an array never imports a library; ``priority``, lower runs
    first in automatic choice among backends serving the same type; ``capabilities``,
    dtype key (see contract.md section 3) -> the reductions computed; ``version``;
    ``available()``, ``can_run(request)`` and ``scatter_elements(request)``.

    ``can_run`` (and :class:`SkipsAutomatic`'s ``skip_automatic``) may look only at the
    request's metadata (array type, dtypes, shapes, axis, reduction, device, the arrays'
    layout, ``out`` and whether it is ``data``), never at values: automatic choices are
    remembered by that metadata (``request.key``, with ``out``'s mode and layout).
    Optional members have protocols of their own: :class:`GathersElements`,
    :class:`SkipsAutomatic` (whose reasons may be a :class:`TransientReason`) and
    :class:`ConvertsArrays`.
    """

    # Read-only members: a class attribute, an instance attribute or a property will do.
    @property
    def name(self) -> str:
        """Unique, lower-case name."""
        ...

    @property
    def array_types(self) -> tuple[str, ...]:
        """The array types served, as ``"module:qualname"`` strings."""
        ...

    @property
    def priority(self) -> int:
        """Lower runs first in automatic choice."""
        ...

    @property
    def capabilities(self) -> Mapping[str, frozenset[str]]:
        """The reductions computed, by dtype key."""
        ...

    @property
    def version(self) -> str:
        """The version of the library doing the work (numpy, numba, cupy)."""
        ...

    def available(self) -> str | None:
        """Return None when usable, else why not (package missing, no device). Cached."""
        ...

    def can_run(self, request: Request) -> str | None:
        """Return None when this backend can compute ``request``, else why not.

        Parameters
        ----------
        request : Request
            The validated call; look at its metadata only, never at values. A request
            of another operation than ScatterElements comes only to a backend with that
            operation's method (``gather_elements``, ``scatter_nd``, ``gather_nd``).

        Returns
        -------
        str or None
            Why not, or None.
        """
        ...

    def scatter_elements(self, request: ScatterRequest) -> Any:
        """Compute the result of ``request`` as a new array.

        Parameters
        ----------
        request : ScatterRequest
            The validated call.

        Returns
        -------
        array
            A new array of the library and device of ``request.data``.
        """
        ...


class TransientReason(str):
    """A reason to pass a call over that holds for now only (code still compiling, say).

    Automatic choice remembers the backend it picks for a call's metadata (``request.key``)
    and picks it again without asking; a choice made past a backend that gave a
    TransientReason is not remembered, so that backend is asked again at the next call.

    Examples
    --------
    >>> from scatterx.backend import TransientReason
    >>> why = TransientReason("compiling float32 add kernels in the background")
    >>> isinstance(why, str), why
    (True, 'compiling float32 add kernels in the background')
    """

    __slots__ = ()


@runtime_checkable
class SkipsAutomatic(Protocol):
    """A backend that passes some calls over in *automatic* choice only.

    A backend named explicitly still runs them (for instance: too small to be worth a
    parallel launch, or its code still compiling in the background).
    """

    def skip_automatic(self, request: Request) -> str | None:
        """Return why automatic choice should pass ``request`` over, or None.

        Parameters
        ----------
        request : ScatterRequest or GatherRequest
            The validated call; look at its metadata only, never at values.

        Returns
        -------
        str or None
            The reason to pass it over, or None. A :class:`TransientReason` when it may
            not hold at the next call of the same metadata (the choice made past it is
            not remembered); a plain ``str`` holds for every call of that metadata.
        """
        ...


@runtime_checkable
class GathersElements(Protocol):
    """A backend that also computes ``gather_elements`` (contract.md section 10).

    Its ``can_run`` then receives GatherRequests too: a gather has no reduction, and a
    backend that serves a dtype for any reduction serves it for a gather.
    """

    def gather_elements(self, request: GatherRequest) -> Any:
        """Compute the gather of ``request`` as a new array.

        Parameters
        ----------
        request : GatherRequest
            The validated call.

        Returns
        -------
        array
            A new array of the shape of ``request.indices``, and of the library, device
            and dtype of ``request.data``.
        """
        ...


@runtime_checkable
class ComputesND(Protocol):
    """A backend that also computes ``scatter_nd`` and ``gather_nd`` (contract section 14).

    Its ``can_run`` then receives their requests too; a backend has either method, or
    both, and the front-end asks only a backend that has the one a call needs.
    """

    def scatter_nd(self, request: ScatterNDRequest) -> Any:
        """Compute the ScatterND of ``request``.

        Parameters
        ----------
        request : ScatterNDRequest
            The validated call.

        Returns
        -------
        array
            As :meth:`Backend.scatter_elements` returns it.
        """
        ...

    def gather_nd(self, request: GatherNDRequest) -> Any:
        """Compute the GatherND of ``request`` as a new array.

        Parameters
        ----------
        request : GatherNDRequest
            The validated call.

        Returns
        -------
        array
            A new array of the shape ``request.result_shape``, and of the library, device
            and dtype of ``request.data``.
        """
        ...


@runtime_checkable
class ConvertsArrays(Protocol):
    """A backend that can move test data to and from its array type (the conformance suite)."""

    def from_numpy(self, array: np.ndarray[Any, Any]) -> Any:
        """Return ``array`` as the backend's array type.

        Parameters
        ----------
        array : numpy.ndarray
            Test data.

        Returns
        -------
        array
            The same values in the backend's array type.

        Raises
        ------
        TypeError
            For what the backend's arrays cannot hold.
        """
        ...

    def to_numpy(self, array: Any) -> np.ndarray[Any, Any]:
        """Return one of the backend's arrays as a NumPy array.

        Parameters
        ----------
        array : array
            An array of the backend's type.

        Returns
        -------
        numpy.ndarray
            The same values.
        """
        ...
