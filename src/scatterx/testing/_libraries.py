"""Test data in other array libraries: PyTorch, JAX and array-api-strict.

The conformance matrix runs every case family through each installed library as well as
through a backend's own arrays (contract.md, section 6): the case's NumPy arrays are made
into the library's arrays on a device, the call goes through
:func:`scatterx.scatter_elements`, and the result must be an array of that library on that
device with ``data``'s dtype, bit for bit the oracle's.

An adapter makes arrays for tests only; scatterx itself carries a library's arrays to a
backend through DLPack. Each adapter copies a case's array into memory of its own, so that
nothing a wrong backend does reaches the case (shared by every run in a process). Where the
library can, the copy keeps the case's layout: strides (Fortran order, strided views,
broadcast zero strides; NumPy's negative strides where the library has them), so that
DLPack carries non-contiguous memory too. What a library cannot hold raises TypeError (the
runner skips the case, saying why): strings and object arrays everywhere, byte-swapped
dtypes, float16 and bfloat16 in array-api-strict, 64-bit dtypes in JAX without x64.

JAX without ``jax_enable_x64`` would silently make int64 data int32: :func:`enable_jax_x64`
turns x64 on for the process, and the JAX adapter refuses (TypeError) rather than downcast.
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import cache
from typing import Any, Protocol

import numpy as np

Array = np.ndarray[Any, Any]

NATIVE = "native"
"""The name of the matrix's column of each backend's own arrays (its ``from_numpy``)."""

LIBRARIES = ("torch", "jax", "array_api_strict")
"""The array libraries the conformance matrix runs every case family through."""

DEVICES = ("cpu", "cuda")
"""Where an adapter can make arrays: host memory (NumPy-serving backends) or a CUDA GPU."""

# Where the arrays of a backend's array type live: the device a library's arrays must be on
# for scatterx to carry them to that backend without copying.
BACKEND_DEVICES = {"numpy:ndarray": "cpu", "cupy:ndarray": "cuda"}

# The dtypes that a library holds (numpy dtype names; bfloat16 is ml_dtypes'). Native byte
# order only: no library but NumPy has byte-swapped dtypes.
_NUMERIC = frozenset(
    {
        *("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
        *("float32", "float64", "complex64", "complex128"),
    }
)
_HELD = {
    "torch": _NUMERIC | {"float16", "bfloat16"},
    "jax": _NUMERIC | {"float16", "bfloat16"},
    "array_api_strict": _NUMERIC,  # the array API standard has no float16, no bfloat16
}
_64_BIT = frozenset(["int64", "uint64", "float64", "complex128"])
_MODULES = {"torch": "torch", "jax": "jax", "array_api_strict": "array_api_strict"}
_INSTALL = {"torch": "torch", "jax": "jax", "array_api_strict": "array-api-strict"}


class Library(Protocol):
    """What the runner needs of an array library to hand it test data and read results."""

    @property
    def name(self) -> str:
        """The library's name in the matrix: ``"torch"``, ``"jax"``, ``"array_api_strict"``."""
        ...

    @property
    def devices(self) -> tuple[str, ...]:
        """The devices (of :data:`DEVICES`) the library can ever hold arrays on."""
        ...

    def available(self, device: str = "cpu") -> str | None:
        """None when the library imports and has ``device`` here, else why not."""
        ...

    def from_numpy(self, array: Array, device: str) -> Any:
        """A copy of ``array`` as the library's array on ``device``; TypeError when the
        library cannot hold its dtype."""
        ...

    def to_numpy(self, array: Any) -> Array:
        """The values of the library's ``array`` as a NumPy array (bfloat16 as ml_dtypes')."""
        ...

    def check_result(self, result: Any, like: Any) -> str | None:
        """None when ``result`` is the library's array on the device and with the dtype of
        ``like``, else what is wrong."""
        ...


def _module(name: str) -> Any:
    """The library's module, imported on first use (typed Any: the libraries are optional)."""
    return importlib.import_module(_MODULES[name])


def _not_installed(name: str) -> str | None:
    if importlib.util.find_spec(_MODULES[name]) is None:
        return f"{name} is not installed (pip install {_INSTALL[name]})"
    return None


def _check_dtype(library: str, dtype: np.dtype[Any]) -> None:
    """TypeError unless ``library`` holds ``dtype``; the message names a kind of dtype
    rather than each dtype, so that skips count by a few reasons."""
    if dtype.kind not in "biufcV" or (dtype.kind == "V" and dtype.name != "bfloat16"):
        msg = f"{library} holds numbers only: no strings, objects or datetimes"
        raise TypeError(msg)
    if not dtype.isnative:
        msg = f"{library} holds native byte order only"
        raise TypeError(msg)
    if dtype.name not in _HELD[library]:
        msg = f"{library} cannot hold dtype {dtype}"
        raise TypeError(msg)


def _private_copy(array: Array, negative_strides: bool = True) -> Array:
    """A writable copy of ``array`` in new memory with its strides (zero strides included,
    negative ones too where ``negative_strides``, else the copy walks memory forwards)."""
    if array.size == 0 or array.ndim == 0 or not array.strides:
        return np.array(array, copy=True)
    if not negative_strides and min(array.strides) < 0:
        array = np.array(array, order="K", copy=True)  # same order in memory, forwards
    if any(s % array.itemsize for s in array.strides):
        return np.array(array, order="K", copy=True)
    shape, strides = array.shape, array.strides
    low = sum(s * (n - 1) for s, n in zip(strides, shape, strict=True) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(strides, shape, strict=True) if s > 0)
    memory = np.empty(high - low + array.itemsize, dtype=np.uint8)
    copy: Array = np.ndarray(shape, array.dtype, buffer=memory, offset=-low, strides=strides)
    if array.dtype == np.bool_:  # bytes, not values: bools whose bytes are not 0/1 stay so
        np.copyto(copy.view(np.uint8), array.view(np.uint8))
    else:
        np.copyto(copy, array)
    return copy


def _bfloat16() -> Any:
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


class _Adapter:
    """What the adapters share: availability through :func:`_availability`, and the check
    of a result's type, device and dtype (each adapter says how to read them)."""

    name: str
    devices: tuple[str, ...] = DEVICES
    type_name: str  # the name of the library's array type, in messages

    def available(self, device: str = "cpu") -> str | None:
        return _availability(self.name, device)

    def _device_reason(self, device: str) -> str | None:
        raise NotImplementedError

    def _array_type(self) -> type:
        raise NotImplementedError

    def _device_of(self, array: Any) -> str:
        return str(array.device)

    def _dtype_of(self, array: Any) -> str:
        return str(array.dtype)

    def check_result(self, result: Any, like: Any) -> str | None:
        if not isinstance(result, self._array_type()):
            kind = type(result)
            return f"returned {kind.__module__}.{kind.__qualname__}, not {self.type_name}"
        device, data_device = self._device_of(result), self._device_of(like)
        if device != data_device:
            return f"returned an array on {device}, data is on {data_device}"
        dtype, data_dtype = self._dtype_of(result), self._dtype_of(like)
        if dtype != data_dtype:
            return f"returned dtype {dtype}, data has {data_dtype}"
        return None


class _Torch(_Adapter):
    """PyTorch tensors on the CPU or a CUDA device (bfloat16 through an int16 view)."""

    name = "torch"
    type_name = "torch.Tensor"

    def _device_reason(self, device: str) -> str | None:
        torch = _module(self.name)
        if device == "cuda" and not torch.cuda.is_available():
            build = torch.version.cuda or "none: a CPU build"
            return f"torch {torch.__version__} has no CUDA device (CUDA build: {build})"
        return None

    def _array_type(self) -> type:
        tensor: type = _module(self.name).Tensor
        return tensor

    def from_numpy(self, array: Array, device: str) -> Any:
        torch = _module(self.name)
        _check_dtype(self.name, array.dtype)
        bf16 = array.dtype.name == "bfloat16"
        held = _private_copy(array.view(np.int16) if bf16 else array, negative_strides=False)
        tensor = torch.from_numpy(held)
        if bf16:
            tensor = tensor.view(torch.bfloat16)
        return tensor if device == "cpu" else tensor.to("cuda")

    def to_numpy(self, array: Any) -> Array:
        torch = _module(self.name)
        tensor = array.detach().resolve_conj().resolve_neg().cpu()
        if tensor.dtype == torch.bfloat16:
            values: Array = tensor.view(torch.int16).numpy()
            return values.view(_bfloat16())
        return np.asarray(tensor.numpy())


class _Jax(_Adapter):
    """JAX arrays on the CPU or a GPU; 64-bit dtypes only with x64 (:func:`enable_jax_x64`)."""

    name = "jax"
    type_name = "jax.Array"

    def _device_reason(self, device: str) -> str | None:
        try:
            self._device(device)
        except RuntimeError as exc:
            return f"jax has no {device} device: {exc}"
        return None

    def _device(self, device: str) -> Any:
        jax = _module(self.name)
        return jax.devices("gpu" if device == "cuda" else "cpu")[0]

    def _array_type(self) -> type:
        array: type = _module(self.name).Array
        return array

    def _device_of(self, array: Any) -> str:
        return ", ".join(sorted(str(d) for d in array.devices()))

    def from_numpy(self, array: Array, device: str) -> Any:
        jax = _module(self.name)
        _check_dtype(self.name, array.dtype)
        if array.dtype.name in _64_BIT and not jax.config.jax_enable_x64:
            msg = f"jax without x64 (jax_enable_x64) would make {array.dtype} 32-bit"
            raise TypeError(msg)
        # JAX arrays have no strides: the copy is C-ordered (and JAX's own, on the device).
        held = jax.device_put(np.array(array, copy=True), self._device(device))
        if held.dtype != array.dtype:
            msg = f"jax holds {array.dtype} as {held.dtype}"
            raise TypeError(msg)
        return held

    def to_numpy(self, array: Any) -> Array:
        return np.asarray(array)


class _ArrayApiStrict(_Adapter):
    """array-api-strict arrays, on its CPU device (the one its computations run on)."""

    name = "array_api_strict"
    devices: tuple[str, ...] = ("cpu",)
    type_name = "array_api_strict.Array"

    def _device_reason(self, device: str) -> str | None:
        if device != "cpu":
            return f"array_api_strict holds arrays in host memory only, not on {device}"
        return None

    def _array_type(self) -> type:
        return type(_module(self.name).asarray(0))

    def _device_of(self, array: Any) -> str:
        return repr(array.device)

    def _dtype_of(self, array: Any) -> str:
        return repr(array.dtype)

    def from_numpy(self, array: Array, device: str) -> Any:
        xp = _module(self.name)
        _check_dtype(self.name, array.dtype)
        if device != "cpu":
            msg = f"array_api_strict holds arrays in host memory only, not on {device}"
            raise TypeError(msg)
        return xp.asarray(_private_copy(array), device=xp.Device("CPU_DEVICE"))

    def to_numpy(self, array: Any) -> Array:
        return np.asarray(array)


_ADAPTERS: dict[str, _Torch | _Jax | _ArrayApiStrict] = {
    "torch": _Torch(),
    "jax": _Jax(),
    "array_api_strict": _ArrayApiStrict(),
}


@cache
def _availability(name: str, device: str) -> str | None:
    """Why the library ``name`` cannot make arrays on ``device``, or None. Cached."""
    if device not in DEVICES:
        return f"unknown device {device!r}; the adapters know {', '.join(DEVICES)}"
    reason = _not_installed(name)
    if reason is not None:
        return reason
    try:
        return _ADAPTERS[name]._device_reason(device)
    except Exception as exc:  # a library that fails to import says why, as a reason
        return f"{name} cannot be used: {exc!r}"


def library(name: str) -> Library:
    """The adapter of the array library ``name`` (one of :data:`LIBRARIES`).

    Parameters
    ----------
    name : str
        ``"torch"``, ``"jax"`` or ``"array_api_strict"``.

    Returns
    -------
    Library
        Its adapter; the library itself is imported on first use.

    Raises
    ------
    ValueError
        For a name that is not one of :data:`LIBRARIES`.
    """
    if name not in _ADAPTERS:
        msg = f"unknown array library {name!r}; known: {', '.join(LIBRARIES)}"
        raise ValueError(msg)
    return _ADAPTERS[name]


def enable_jax_x64() -> None:
    """Turn on JAX's 64-bit dtypes for this process, where JAX is installed.

    Without it JAX makes int64, float64 and complex128 data 32-bit; with it the matrix
    covers them through JAX too. Call it before any JAX array is made: the conformance
    module and ``python -m scatterx check`` do.
    """
    if _not_installed("jax") is None:
        _module("jax").config.update("jax_enable_x64", True)


def device_for(array_types: tuple[str, ...]) -> str | None:
    """The device a library's arrays must be on for a backend serving ``array_types``.

    ``"cpu"`` for a backend of NumPy arrays, ``"cuda"`` for one of CuPy arrays; None for a
    backend serving neither (its library's own arrays are its native column).
    """
    for array_type in array_types:
        if array_type in BACKEND_DEVICES:
            return BACKEND_DEVICES[array_type]
    return None
