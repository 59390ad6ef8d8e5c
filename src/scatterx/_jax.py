"""JAX traces: inside ``jax.jit``, ``jax.vmap`` or ``jax.grad`` a call runs as a host callback.

A traced value has a shape and a dtype but no buffer, so the call is checked (contract
section 4) and its backend chosen at trace time, on stand-in NumPy arrays of the same
metadata, and computed when the traced function runs, by ``jax.pure_callback`` on the
host: JAX hands the callback NumPy arrays and takes its NumPy result back.

Under ``jax.vmap`` the callback gets every argument with the batch dimensions in front
(``vmap_method="broadcast_all"``), and one scatter along the shifted axis does the whole
batch: batch coordinates, like every coordinate but the axis, are kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._request import ScatterRequest
from ._select import Decision, _configured, choose, explain_request

ROUTE = "jax trace -> numpy:ndarray by jax.pure_callback (a host callback), at run time"


def stand_in(request: ScatterRequest) -> ScatterRequest:
    """A NumPy request with ``request``'s metadata, on arrays that hold no memory."""
    arrays = [
        np.broadcast_to(np.zeros((), dtype=np.dtype(a.dtype)), a.shape)
        for a in (request.data, request.indices, request.updates)
    ]
    return request._replace(
        data=arrays[0],
        indices=arrays[1],
        updates=arrays[2],
        array_type="numpy:ndarray",
        device="cpu",
        key=None,
    )


def explain_traced(request: ScatterRequest, backend: Any) -> Decision:
    """The decision the host callback of a traced call will make."""
    decision = explain_request(stand_in(request), backend)
    return Decision(decision.backend, decision.source, decision.call, decision.reasons, ROUTE)


def scatter_traced(request: ScatterRequest, backend: Any) -> Any:
    """The traced result of a call on traced JAX values: a host callback."""
    import jax

    from ._api import scatter_elements

    choose(stand_in(request), backend)  # a backend named that cannot run raises now
    names, _ = _configured(backend)  # use_backend and the rest, as at trace time
    axis, reduction, rank = request.axis, request.reduction, len(request.shape)

    def host(data: Any, indices: Any, updates: Any) -> Any:
        batch = np.ndim(data) - rank  # vmap's dimensions, in front
        result = scatter_elements(
            np.asarray(data),
            np.asarray(indices),
            np.asarray(updates),
            axis=axis + batch,
            reduction=reduction,
            backend=names,
        )
        return np.asarray(result)

    shape = jax.ShapeDtypeStruct(request.shape, request.data.dtype)  # type: ignore[no-untyped-call]
    return jax.pure_callback(
        host, shape, request.data, request.indices, request.updates, vmap_method="broadcast_all"
    )
