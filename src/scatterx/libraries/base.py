"""Array libraries that no backend serves natively: carried through DLPack, and back.

An array of such a library (PyTorch, JAX, array-api-strict, any object with
``__dlpack__``) is carried without a copy to the carrier type that serves its memory:
CPU memory to ``numpy.ndarray``, CUDA memory to ``cupy.ndarray`` on the same device. The
chosen backend runs on the carried arrays, and its result goes back through the caller's
own ``from_dlpack``, so the caller gets its own library's array on its own device.

Library-specific code lives in a :class:`Library` subclass, and only where DLPack cannot
carry something, or carries it too slowly for a small call:

- PyTorch: ``Tensor.numpy()`` and ``torch.from_numpy`` share memory as DLPack does, at
  less cost to a small call; NumPy's DLPack
  cannot import bfloat16, so bfloat16 goes through an int16 view; the conjugate and negative
  bits are resolved first (a copy, which the route says); tensors that require grad reach
  a route detached, their call recorded by autograd (:mod:`scatterx._torch.autograd`); CUDA
  work is ordered on torch's current stream.
- JAX: on the CPU ``numpy.asarray`` is a read-only view of the buffer (bfloat16 included);
  results go back through ``jax.numpy.from_dlpack``, which copies unless the buffer is
  64-byte aligned (bfloat16, which JAX's DLPack refuses, through ``jax.device_put``);
  tracers (inside ``jax.jit``, ``jax.vmap``, ``jax.grad``) run as a host callback: see
  :mod:`scatterx._jax.trace`.
- array-api-strict: only ``CPU_DEVICE`` is CPU memory; its other devices refuse DLPack.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .._request import Request

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

    #: Carries a call's arrays (one tuple) to NumPy before validation where that can only
    #: succeed for arrays the NumPy route takes as they are (see
    #: ``scatterx._pipeline.adopt``); or None.
    early: Callable[[Arrays], Arrays | None] | None = None

    def early_route(self, kind: type) -> Route:
        """The route of arrays of type ``kind`` that :attr:`early` carried."""
        msg = f"{self.name} carries nothing early"
        raise NotImplementedError(msg)

    def check_out(self, out: Array) -> None:
        """Raise for an ``out`` of this library that cannot take the result (none, by
        default); the checks every library shares are :mod:`scatterx._check.out`'s."""

    def wrote(self, out: Array) -> None:
        """Tell the library that a call wrote into ``out`` behind its back (through a view
        of its memory): nothing to tell, by default."""

    def records(self, request: Request) -> bool:
        """Whether autograd records ``request`` (an array that requires grad): no, but torch."""
        return False

    def traced(self, arrays: Arrays) -> bool:
        """Whether the library traces a call of ``arrays`` (then its operators take the
        call): no, but torch's tracers."""
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


# Filled on demand, without a lock: an answer depends on the type alone, so two threads that
# miss at once store equal values (contract section 13).
_FROM_DLPACK: dict[type, tuple[Callable[..., Any], bool]] = {}


def type_name(array_type: type) -> str:
    """``"module:qualname"`` of an array type, e.g. ``"numpy:ndarray"``."""
    try:
        return _TYPE_NAMES[array_type]
    except KeyError:
        name = f"{array_type.__module__.partition('.')[0]}:{array_type.__qualname__}"
        _TYPE_NAMES[array_type] = name
        return name


_TYPE_NAMES: dict[type, str] = {}


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
