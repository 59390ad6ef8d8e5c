"""Array libraries that no backend serves natively: carried through DLPack, and back.

An array of such a library (PyTorch, JAX, array-api-strict, any object with
``__dlpack__``) is carried without a copy to the carrier type that serves its memory:
CPU memory to ``numpy.ndarray``, CUDA memory to ``cupy.ndarray`` on the same device. The
chosen backend runs on the carried arrays, and its result goes back through the caller's
own ``from_dlpack``, so the caller gets its own library's array on its own device.

Library-specific code lives in a :class:`Library` subclass, and only where DLPack cannot
carry something, or carries it too slowly for a small call:

- PyTorch: ``Tensor.numpy()`` and ``torch.from_numpy`` share memory as DLPack does, at
  about a quarter of the cost (0.7 and 0.5 microseconds against 2.4 and 1.4); NumPy's DLPack
  cannot import bfloat16, so bfloat16 goes through an int16 view; the conjugate and negative
  bits are resolved first (a copy, which the route says); tensors that require grad reach
  a route detached, their call recorded by autograd (:mod:`scatterx._torch_grad`); CUDA
  work is ordered on torch's current stream.
- JAX: on the CPU ``numpy.asarray`` is a read-only view of the buffer (bfloat16 included);
  results go back through ``jax.numpy.from_dlpack``, which copies unless the buffer is
  64-byte aligned (bfloat16, which JAX's DLPack refuses, through ``jax.device_put``);
  tracers (inside ``jax.jit``, ``jax.vmap``, ``jax.grad``) run as a host callback: see
  :mod:`scatterx._jax`.
- array-api-strict: only ``CPU_DEVICE`` is CPU memory; its other devices refuse DLPack.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Hashable, Iterator
from functools import cache, cached_property
from typing import Any, NamedTuple

import numpy as np

from ._request import GatherRequest, Request

NUMPY = "numpy:ndarray"
CUPY = "cupy:ndarray"
#: The carrier type of each kind of memory: what DLPack can reach a backend through.
CARRIERS = {"cpu": NUMPY, "cuda": CUPY}
#: DLPack device types: CPU, CUDA, CUDA host (pinned) and CUDA managed memory.
_MEMORY = {1: "cpu", 2: "cuda", 3: "cpu", 13: "cuda"}
#: The device of a traced JAX value (inside jax.jit): it has none until it runs.
TRACED = "jax trace"

Array = Any
#: Data, indices and updates.
Arrays = tuple[Array, ...]


class Library:
    """How the arrays of one library are checked, carried to a carrier type and brought back.

    The generic behaviour speaks DLPack and the array API standard only.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def devices(self, *arrays: Array) -> tuple[Any, ...]:
        """The arrays' devices, as the array API standard's ``device`` attribute gives them."""
        return tuple(a.device for a in arrays)

    def memory(self, array: Array) -> str | None:
        """``"cpu"`` or ``"cuda"``: what kind of memory holds ``array``; None if neither."""
        try:
            code, _ = array.__dlpack_device__()
        except Exception:  # a device DLPack has no code for (torch's "meta", for one)
            return None
        return _MEMORY.get(int(code))

    #: Carries arrays to NumPy before validation where that can only succeed for arrays
    #: the NumPy route takes as they are (see ``scatterx._pipeline.adopt``); or None.
    early: Callable[..., Arrays | None] | None = None

    def early_route(self, kind: type) -> Route:
        """The route of arrays of type ``kind`` that :attr:`early` carried."""
        msg = f"{self.name} carries nothing early"
        raise NotImplementedError(msg)

    def records(self, request: Request) -> bool:
        """Whether autograd records ``request`` (an array that requires grad): no, but torch."""
        return False

    def refuse(self, *arrays: Array) -> None:
        """Raise TypeError for arrays that cannot be carried (none, by default).

        Called by the conversions, where they fail or before they start.
        """

    def copies(self, request: Request) -> str | None:
        """What carrying ``request`` copies, if anything (said by ``explain``)."""
        return None

    def to_numpy(self, arrays: Arrays, dtype_key: str) -> Arrays:
        """The arrays (data, indices and any updates) as NumPy arrays sharing their memory."""
        return tuple(np.from_dlpack(a) for a in arrays)

    def to_cupy(self, arrays: Arrays, dtype_key: str) -> Arrays:
        """The arrays as CuPy arrays sharing their memory (CuPy orders the hand-over on its
        current stream)."""
        import cupy

        return tuple(cupy.from_dlpack(a) for a in arrays)

    def back(self, result: Array, like: Array, dtype_key: str) -> Array:
        """``result`` (a carrier array) as an array of this library, on ``like``'s device."""
        from_dlpack, takes_device = _from_dlpack(like)
        if takes_device:
            return from_dlpack(result, device=like.device)
        return from_dlpack(result)

    def running(self, array: Array) -> contextlib.AbstractContextManager[Any]:
        """A context in which a backend runs on this array's device (CUDA: its stream)."""
        return contextlib.nullcontext()


_FROM_DLPACK: dict[type, tuple[Callable[..., Any], bool]] = {}
_EARLY: dict[type, Route] = {}


def type_name(array_type: type) -> str:
    """``"module:qualname"`` of an array type, e.g. ``"numpy:ndarray"``."""
    try:
        return _TYPE_NAMES[array_type]
    except KeyError:
        name = _joined_name(array_type.__module__, array_type.__qualname__)
        _TYPE_NAMES[array_type] = name
        return name


_TYPE_NAMES: dict[type, str] = {}


@cache
def _joined_name(module: str, qualname: str) -> str:
    return f"{module.partition('.')[0]}:{qualname}"


def _from_dlpack(like: Array) -> tuple[Callable[..., Any], bool]:
    """The ``from_dlpack`` of an array's namespace, and whether it takes ``device=``."""
    found = _FROM_DLPACK.get(type(like))
    if found is None:
        import array_api_compat

        function = array_api_compat.array_namespace(like).from_dlpack
        try:
            takes_device = "device" in inspect.signature(function).parameters
        except (TypeError, ValueError):  # a builtin without a signature
            takes_device = False
        found = _FROM_DLPACK[type(like)] = (function, takes_device)
    return found


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


class Route(NamedTuple):
    """How a request's arrays reach the backends serving ``carrier``, and come back.

    Attributes
    ----------
    library : Library
        The caller's array library.
    source : str
        The caller's array type, ``"module:qualname"``.
    device : object
        The caller's device.
    carrier : str
        The array type the backends run on: ``"numpy:ndarray"`` or ``"cupy:ndarray"``.
    copies : str or None
        What carrying copies, if anything: set by ``explain``, which asks the library.
    """

    library: Library
    source: str
    device: Any
    carrier: str
    copies: str | None

    def carry(self, request: Request) -> Request:
        """``request`` with its arrays carried: the request a carrier backend runs."""
        if self.carrier == NUMPY:
            arrays = self.library.to_numpy(request.arrays, request.dtype_key)
            return request.with_arrays(arrays, self.carrier, "cpu")
        arrays = self.library.to_cupy(request.arrays, request.dtype_key)
        return request.with_arrays(arrays, self.carrier, arrays[0].device)

    def back(self, result: Array, request: Request) -> Array:
        """A carrier backend's ``result`` as an array of the caller's library and device."""
        return self.library.back(result, request.data, request.dtype_key)

    def __str__(self) -> str:
        how = self.copies or "no copy"
        return f"{self.source} ({self.device}) -> {self.carrier} by DLPack, {how}"


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
