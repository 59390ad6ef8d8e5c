"""An eager call on concrete JAX CPU arrays: carried early to NumPy views, and back.

The small call's way (performance.md: a 3x3 eager call on JAX arrays at most 20
microseconds over the same call on NumPy arrays), as CPU tensors go
(:mod:`scatterx._adopt`):

- :func:`early`: the arrays' read-only NumPy views (``np.asarray``, no copy), before the
  check, where that gives the decision the DLPack route would give: concrete arrays
  (not tracers) of one single-device sharding on JAX's first CPU device, indices of a dtype the
  contract takes (others go the usual way, whose errors name JAX's arrays). The check
  then takes NumPy's fast lane.
- :func:`to_jax`: the NumPy result as a JAX array on the caller's device.
  ``jax.numpy.from_dlpack`` takes 30 to 40 microseconds in Python for any array; the call
  under it, jaxlib's ``batched_device_put``, about 4. With its default ``ZERO_COPY``
  semantics XLA's CPU client takes a 64-byte aligned, C-ordered NumPy array's memory as
  the new array's buffer and holds the NumPy array until that buffer is gone (the pool of
  :mod:`scatterx._results` then sees it in use); anything else it copies. Where jaxlib
  has no such call, or refuses one, the result goes back through ``from_dlpack``.

Threads: :data:`_ON_CPU` remembers an answer that depends on its key alone; two threads
that miss at once compute equal answers, and one dict store wins whole.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

#: The dtypes of indices the contract takes, as :func:`early` asks of their views.
_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))

#: By sharding: whether it is one CPU device's (filled without a lock, see above).
_ON_CPU: dict[Any, bool] = {}


def early(arrays: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The NumPy views of concrete JAX arrays on one CPU device, or None."""
    import jax

    first = arrays[0]
    if isinstance(first, jax.core.Tracer):
        return None
    try:
        sharding = first.sharding
        for other in arrays[1:]:
            if other.sharding != sharding:  # another device: the usual way's error
                return None
        on_cpu = _ON_CPU.get(sharding)
        if on_cpu is None:
            on_cpu = _ON_CPU[sharding] = _one_cpu_device(sharding)
        if not on_cpu:
            return None
        views = tuple([np.asarray(a) for a in arrays])
    except (AttributeError, RuntimeError, TypeError):  # deleted, or not an array as known
        return None
    return views if views[1].dtype in _INDEX_DTYPES else None


def _one_cpu_device(sharding: Any) -> bool:
    import jax

    if not isinstance(sharding, jax.sharding.SingleDeviceSharding):
        return False
    (device,) = sharding.device_set
    return bool(device == cpu_device())


def cpu_device() -> Any:
    """The device of the arrays :func:`early` carries: JAX's first CPU device (the one the
    route of arrays carried early names; arrays on another go the usual way)."""
    import jax

    return jax.devices("cpu")[0]


def to_jax(result: Any, device: Any) -> Any:
    """``result`` (a NumPy array) as a JAX array on ``device``."""
    put = _device_put()
    if put is not None:
        try:
            return put(_aval(result.shape, result.dtype), _sharding(device), [result], [device])
        except (TypeError, ValueError, RuntimeError):  # refused: the public way
            pass
    return _from_dlpack(result, device)


def _from_dlpack(result: Any, device: Any) -> Any:
    import jax

    if result.dtype.name == "bfloat16":  # JAX's DLPack takes no bfloat16 from NumPy
        return jax.device_put(result, device)
    return jax.numpy.from_dlpack(result, device=device)


@functools.cache
def _device_put() -> Any:
    """jaxlib's ``batched_device_put``, or None where this jaxlib has none."""
    try:
        from jax._src.lib import xla_client  # type: ignore[attr-defined]
    except ImportError:
        return None
    return getattr(xla_client, "batched_device_put", None)


@functools.lru_cache(maxsize=64)
def _sharding(device: Any) -> Any:
    import jax

    return jax.sharding.SingleDeviceSharding(device)


@functools.lru_cache(maxsize=256)
def _aval(shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
    import jax

    return jax.core.ShapedArray(shape, dtype)
