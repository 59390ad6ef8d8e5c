"""The JAX adapter: CPU buffers as read-only NumPy views (concrete arrays carried early),
results back without a copy (:mod:`scatterx.libraries.jax_eager`); tracers (inside ``jax.jit``,
``jax.vmap``, ``jax.grad``) have no device and run as a host callback
(:mod:`scatterx._jax.trace`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import NUMPY, TRACED, Array, Arrays, Library, Route, type_name
from .jax_eager import cpu_device, early, to_jax

_EARLY: dict[type, Route] = {}  # the routes of arrays carried early, filled without a lock


class Jax(Library):
    """JAX arrays: see the module docstring. Tracers have no device: they are TRACED."""

    def devices(self, *arrays: Array) -> tuple[Any, ...]:
        found = tuple(a.device for a in arrays if not _is_tracer(a))
        if len(found) < len(arrays) or any(_is_sharding(device) for device in found):
            # Tracers, or an array over several devices (its ``device`` is its sharding):
            # the call runs as JAX's traced one, which XLA runs on such arrays as they lie
            # (concrete arrays join a trace as constants).
            return (TRACED,) * len(arrays)
        return found

    def memory(self, array: Array) -> str | None:
        platform = array.device.platform
        return {"cpu": "cpu", "gpu": "cuda", "cuda": "cuda"}.get(platform)

    def to_numpy(self, arrays: Arrays, dtype_key: str) -> Arrays:
        # Read-only views of the buffers (bfloat16 too); JAX arrays are never written.
        return tuple(np.asarray(a) for a in arrays)

    def back(self, result: Array, like: Array, dtype_key: str) -> Array:
        return to_jax(result, like.device)

    #: Concrete CPU arrays' NumPy views, before the check: the small call's way.
    early = staticmethod(early)

    def early_route(self, kind: type) -> Route:
        route = _EARLY.get(kind)
        if route is None:
            device = cpu_device()
            route = _EARLY.setdefault(kind, Route(self, type_name(kind), device, NUMPY, None))
        return route


def _is_tracer(array: Array) -> bool:
    # Imported, not looked up in sys.modules: the caller's array proves JAX is loaded, and
    # the import waits where another thread is still importing it (sys.modules would hold
    # the half-made module).
    import jax

    return isinstance(array, jax.core.Tracer)


def _is_sharding(device: Any) -> bool:
    """Whether ``device`` (an array's ``device``) is a sharding over several devices."""
    import jax

    return isinstance(device, jax.sharding.Sharding)
