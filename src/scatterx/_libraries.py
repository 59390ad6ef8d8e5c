"""The array libraries' adapters, which library an array is of, and its route to a carrier.

Each library that no backend serves natively is carried through DLPack (see
:mod:`scatterx._interop`); what is particular to one lives in its :class:`Library`
subclass here, and only where DLPack cannot carry something, or carries it too slowly for
a small call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterator
from functools import cache, cached_property
from typing import Any

import numpy as np

from ._interop import CARRIERS, CUPY, NUMPY, TRACED, Array, Arrays, Library, Route, type_name
from ._request import GatherRequest, Request

_EARLY: dict[type, Route] = {}


class _Torch(Library):
    """PyTorch tensors: see the module docstring."""

    def memory(self, array: Array) -> str | None:
        kind = array.device.type
        return kind if kind in CARRIERS else None

    @staticmethod
    def early(*arrays: Array) -> Arrays | None:
        """The CPU tensors' NumPy views, or None (another device, a flag set, bfloat16,
        a tensor that requires grad: :mod:`scatterx._torch_grad` takes those)."""
        try:
            return tuple(a.numpy() for a in arrays)
        except (RuntimeError, TypeError):
            return None

    def early_route(self, kind: type) -> Route:
        route = _EARLY.get(kind)
        if route is None:
            route = _EARLY[kind] = Route(self, type_name(kind), _torch().device("cpu"), NUMPY, None)
        return route

    def records(self, request: Request) -> bool:
        if isinstance(request, GatherRequest):
            return bool(request.data.requires_grad)
        return bool(request.data.requires_grad or request.updates.requires_grad)

    def refuse(self, *arrays: Array) -> None:
        strided = self._strided
        if all(array.layout is strided for array in arrays):
            return
        for role, array in zip(("data", "indices", "updates"), arrays, strict=False):
            if array.layout is not strided:
                msg = f"{role} is a {array.layout} tensor: pass {role}.to_dense()"
                raise TypeError(msg)

    @cached_property
    def _strided(self) -> Any:
        return _torch().strided

    def copies(self, request: Request) -> str | None:
        if any(a.is_conj() or a.is_neg() for a in request.arrays):
            return "resolving the conjugate or negative bit copies"
        return None

    def to_numpy(self, arrays: Arrays, dtype_key: str) -> Arrays:
        if dtype_key != "bfloat16":
            try:
                return tuple(a.numpy() for a in arrays)
            except (RuntimeError, TypeError):  # a flag set (checked here: off the fast path)
                self.refuse(*arrays)
                return tuple(_resolved(a).numpy() for a in arrays)
        self.refuse(*arrays)
        int16, bfloat16 = _torch().int16, _bfloat16()
        return tuple(
            a.numpy() if i == 1 else _resolved(a).view(int16).numpy().view(bfloat16)
            for i, a in enumerate(arrays)  # indices (the second) are integers
        )

    def to_cupy(self, arrays: Arrays, dtype_key: str) -> Arrays:
        self.refuse(*arrays)
        return super().to_cupy(tuple(_resolved(a) for a in arrays), dtype_key)

    def back(self, result: Array, like: Array, dtype_key: str) -> Array:
        if type(result) is np.ndarray and dtype_key != "bfloat16":
            return self._from_numpy(result)
        torch = _torch()
        if type(result) is not np.ndarray:  # CUDA memory
            return torch.from_dlpack(result)
        return torch.from_numpy(result.view(np.int16)).view(torch.bfloat16)

    @cached_property
    def _from_numpy(self) -> Callable[[Array], Array]:
        from_numpy: Callable[[Array], Array] = _torch().from_numpy
        return from_numpy

    def running(self, array: Array) -> contextlib.AbstractContextManager[Any]:
        if array.device.type != "cuda":
            return contextlib.nullcontext()
        return _torch_stream(array)


@contextlib.contextmanager
def _torch_stream(array: Array) -> Iterator[None]:
    """Run CuPy on the CUDA device of ``array`` and on torch's current stream there."""
    import cupy

    stream = _torch().cuda.current_stream(array.device)
    with cupy.cuda.Device(array.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
        yield


def _resolved(array: Array) -> Array:
    """A tensor without the lazy conjugate and negative bits (a copy where one was set)."""
    if array.is_conj():
        array = array.resolve_conj()
    if array.is_neg():
        array = array.resolve_neg()
    return array


def _torch() -> Any:
    import torch

    return torch


@cache
def _bfloat16() -> np.dtype[Any]:
    import ml_dtypes

    dtype: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
    return dtype


class _Jax(Library):
    """JAX arrays: see the module docstring. Tracers have no device: they are TRACED."""

    def devices(self, *arrays: Array) -> tuple[Any, ...]:
        if any(_is_tracer(a) for a in arrays):
            return (TRACED,) * len(arrays)  # concrete arrays join the trace as constants
        return tuple(a.device for a in arrays)

    def memory(self, array: Array) -> str | None:
        platform = array.device.platform
        return {"cpu": "cpu", "gpu": "cuda", "cuda": "cuda"}.get(platform)

    def to_numpy(self, arrays: Arrays, dtype_key: str) -> Arrays:
        # Read-only views of the buffers (bfloat16 too); JAX arrays are never written.
        return tuple(np.asarray(a) for a in arrays)

    def back(self, result: Array, like: Array, dtype_key: str) -> Array:
        import jax

        if dtype_key == "bfloat16":  # JAX's DLPack takes no bfloat16 from NumPy
            return jax.device_put(result, like.device)
        return jax.numpy.from_dlpack(result, device=like.device)


class _ArrayApiStrict(Library):
    """array-api-strict: its devices other than ``CPU_DEVICE`` stand for memory NumPy
    cannot reach (its DLPack refuses them), though they say they are CPU memory."""

    def memory(self, array: Array) -> str | None:
        import array_api_strict

        return "cpu" if array.device == array_api_strict.Device("CPU_DEVICE") else None


def _is_tracer(array: Array) -> bool:
    import jax

    return isinstance(array, jax.core.Tracer)


@cache
def _library(top: str) -> Library:
    if top == "torch":
        return _Torch(top)
    if top == "jax":
        return _Jax(top)
    if top == "array_api_strict":
        return _ArrayApiStrict(top)
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
    (those run as a host callback). Remembered by array type and device.
    """
    if request.array_type in (NUMPY, CUPY) or request.device is TRACED:
        return None
    library = library_of(type(request.data))
    if library is None:
        return f"{request.array_type} does not speak DLPack"
    where: tuple[type, Hashable] | None = (type(request.data), request.device)
    try:
        route = _ROUTES.get(where)  # type: ignore[arg-type]
    except TypeError:  # an unhashable device: found afresh
        where, route = None, None
    if route is None:
        route = _new_route(library, request)
        if where is not None:
            _ROUTES[where] = route
    return route


_ROUTES: dict[tuple[type, Hashable], Route | str] = {}


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
