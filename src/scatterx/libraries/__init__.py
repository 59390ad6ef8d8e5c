"""Which library an array is of (one lookup by type, remembered), and its route to a carrier.

Each library that no backend serves natively is carried through DLPack (see
:mod:`scatterx.libraries.base`, whose :class:`Library` is the generic adapter); what is
particular to one library lives in its adapter's module (``_torch_library``,
``_jax_library``, ``_array_api_strict_library``), only where DLPack cannot carry
something, or carries it too slowly for a small call.

Threads (contract section 13): each library's adapter is made once, under a lock (the torch
one defines torch's operators). ``_LIBRARIES`` and ``_ROUTES`` remember answers that depend
only on their key; two threads that miss at once compute equal answers, and one dict store
wins whole, so they are read and filled without a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

import numpy as np

from .._request import Request
from .array_api_strict import ArrayApiStrict
from .base import CARRIERS, CUPY, NUMPY, TRACED, Library, Route
from .jax import Jax
from .torch import Torch

_ADAPTERS: dict[str, Library] = {}
_ADAPTERS_LOCK = threading.Lock()


def _library(top: str) -> Library:
    """The adapter of the library ``top``: one per process, made on first use."""
    with _ADAPTERS_LOCK:
        found = _ADAPTERS.get(top)
        if found is None:
            found = _ADAPTERS[top] = _new_library(top)
        return found


def _new_library(top: str) -> Library:
    if top == "torch":
        return Torch(top)
    if top == "jax":
        return Jax(top)
    if top == "array_api_strict":
        return ArrayApiStrict(top)
    return Library(top)


_LIBRARIES: dict[type, Library | None] = {}
_UNKNOWN: Any = object()


def library_of(kind: type) -> Library | None:
    """The library of an array type, or None for what is not an array of one, or is NumPy's.

    NumPy's own types (ndarray subclasses such as ``np.memmap``, scalars) are left to the
    front-end, which makes them plain ndarrays. CuPy arrays have a library: a carrier's.
    """
    found: Library | None = _LIBRARIES.get(kind, _UNKNOWN)
    if found is _UNKNOWN:
        found = _LIBRARIES[kind] = _find_library(kind)
    return found


def _find_library(kind: type) -> Library | None:
    if issubclass(kind, (np.ndarray, np.generic)):
        return None
    top = kind.__module__.partition(".")[0]
    if top == "jaxlib":  # concrete JAX arrays are jaxlib's ArrayImpl
        top = "jax"
    if top == "jax" or all(hasattr(kind, a) for a in ("shape", "dtype", "__dlpack__")):
        return _library(top)
    return None


def route_for(request: Request) -> Route | str | None:
    """The route of ``request`` to a carrier type; a reason when there is none.

    None when the arrays are a carrier type already (NumPy, CuPy) or are traced by JAX
    (those run as a host callback). Remembered by the request's array type (the caller's:
    a Parameter's detached tensors keep its name) and device.
    """
    if request.array_type in (NUMPY, CUPY) or request.device is TRACED:
        return None
    library = library_of(type(request.data))
    if library is None:
        return f"{request.array_type} does not speak DLPack"
    where: tuple[str, Hashable] | None = (request.array_type, request.device)
    try:
        route = _ROUTES.get(where)  # type: ignore[arg-type]
    except TypeError:  # an unhashable device: found afresh
        where, route = None, None
    if route is None:
        route = _new_route(library, request)
        if where is not None:
            _ROUTES[where] = route
    return route


_ROUTES: dict[tuple[str, Hashable], Route | str] = {}


def _new_route(library: Library, request: Request) -> Route | str:
    memory = library.memory(request.data)
    if memory is None:
        return (
            f"no backend serves {request.array_type} on device {request.device}: DLPack "
            f"carries CPU memory to {NUMPY} and CUDA memory to {CUPY}, and nothing else"
        )
    return Route(library, request.array_type, request.device, CARRIERS[memory], None)


def device_of(array: Any) -> Any:
    """The device of an array of any library."""
    if type(array) is np.ndarray:
        return "cpu"
    library = library_of(type(array))
    if library is not None:
        return library.devices(array, array, array)[0]
    import array_api_compat

    return array_api_compat.device(array)


def library_name(array: Any) -> str:
    """The library of an array: ``numpy``, ``cupy``, ``torch``, ``jax``..."""
    library = library_of(type(array))
    return type(array).__module__.partition(".")[0] if library is None else library.name
