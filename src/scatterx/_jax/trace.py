"""JAX traces: inside ``jax.jit``, ``jax.vmap`` or ``jax.grad`` a call runs on XLA's buffers.

A traced value has a shape and a dtype but no buffer, so the call is checked (contract
sections 4 and 10) and its backend chosen at trace time, on stand-in NumPy arrays of the
same metadata, and computed when the traced function runs: on the CPU by the XLA FFI
target of :mod:`scatterx._jax.ffi`, which runs the pipeline on views of XLA's own
buffers; elsewhere, and for what the target does not serve, by ``jax.pure_callback`` on
the host: JAX hands the callback NumPy arrays and takes its NumPy result back.

Under ``jax.vmap`` the callback gets every argument with the batch dimensions in front
(``vmap_method="broadcast_all"``), and one call along the shifted axis does the whole
batch: batch coordinates, like every coordinate but the axis, are kept. An index out of
bounds raises the error of the call of that batch element alone, its element named.

Each traced call is a ``jax.custom_vjp`` function: its gradient (contract section 9) is
made of scatterx calls and ``jax.numpy``, by :mod:`scatterx._gradients`, so ``jax.grad`` of a
gradient works too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._check import OPERATIONS, derive, unhosted
from .._config import Configured
from .._errors import out_of_bounds_error
from .._gradients import Calls, Rules, gather_vjp, scatter_vjp
from .._plan import Decision, decide, explain_plan
from .._request import ElementsRequest, GatherRequest, Request, ScatterRequest
from .._results import results_into
from .._run import run
from ..libraries.base import NUMPY, TRACED
from . import ffi as _jax_ffi

ROUTE = "jax trace -> numpy:ndarray by jax.pure_callback (a host callback), at run time"


def stand_in(request: Request) -> Request:
    """A NumPy request with ``request``'s metadata, on arrays that hold no memory."""
    arrays = tuple(
        np.broadcast_to(np.zeros((), dtype=np.dtype(a.dtype)), a.shape) for a in request.arrays
    )
    return request.with_arrays(arrays, "numpy:ndarray", "cpu")._replace(key=None)


def explain_traced(request: Request, backend: Any) -> Decision:
    """The decision the FFI target or host callback of a traced call will make."""
    decision = explain_plan(stand_in(request), backend)
    route = ROUTE if _jax_ffi.serves(request) else _jax_ffi.ROUTE
    return Decision(decision.backend, decision.source, decision.call, decision.reasons, route)


#: The run of the callback's NumPy arrays: the choice, the number of vmap's batch
#: dimensions (in front), the arrays.
Host = Callable[..., Any]


def traced(request: Request, choice: Configured) -> Any:
    """The traced result of a call of traced JAX values: a differentiable call of the FFI
    target on the CPU, of the host callback elsewhere.

    A backend named that cannot run the call raises now, at trace time (automatic
    choice has the numpy backend, which runs every call); the target and the callback run
    the pipeline on the host's arrays with the choice in force now (``use_backend`` and
    the rest), whatever is in force when the traced function runs.
    """
    if not isinstance(request, (ScatterRequest, GatherRequest)):
        raise unhosted(request.operation, "under a JAX transform (jit, vmap, grad)")
    if choice.names is not None:
        decide(stand_in(request), choice)
    lowered = _Lowered(_on_host(request), choice, request)
    calls = Calls(choice, request, _gradient_run)
    if isinstance(request, GatherRequest):
        return _gather(request.axis, calls, request.shape, lowered)(*request.arrays)
    return _scatter(request.axis, request.reduction, calls, lowered)(*request.arrays)


def _on_host(request: Request) -> Host:
    """The run of the host's arrays of a traced call (the FFI target's views of XLA's
    buffers, or the callback's NumPy arrays): they have the traced values' metadata,
    checked at trace time. Under ``jax.vmap`` (its batch dimensions in front) they make
    the request of the batch, along the shifted axis, checked by nothing again."""
    operation = OPERATIONS[request.operation]
    reduction = getattr(request, "reduction", None)

    def host(choice: Configured, batch: int, *arrays: Any) -> Any:
        if batch == 0:
            return run(request.with_arrays(arrays, NUMPY, "cpu"), choice)
        return run(derive(operation, request, arrays, request.axis + batch, reduction), choice)

    return host


def _gradient_run(request: Request, choice: Configured) -> Any:
    """The run of a gradient's call: traced in turn (``jax.grad`` of a gradient, or under
    ``jit``), else eager."""
    if request.device is TRACED:
        return traced(request, choice)
    return run(request, choice)


class _Lowered:
    """The computation of a traced call: the FFI target's call on the CPU where it serves
    the call, else (and on other platforms) the host callback."""

    def __init__(self, host: Host, choice: Configured, request: ElementsRequest) -> None:
        unbatched = _Unbatched(host, choice, request.axis)
        self.callback = _host(unbatched, request.data.ndim)
        self.key: int | None = None
        if _jax_ffi.serves(request) is None:
            self.key = _jax_ffi.key(request, choice, _ffi_run(unbatched))

    def __call__(self, result: Any, *arrays: Any) -> Any:
        import jax

        def callback(*arrays: Any) -> Any:
            return jax.pure_callback(self.callback, result, *arrays, vmap_method="broadcast_all")

        key = self.key
        if key is None:
            return callback(*arrays)
        return jax.lax.platform_dependent(
            *arrays, cpu=lambda *a: _jax_ffi.call(key, result, *a), default=callback
        )


class _Unbatched:
    """The pipeline's run of a traced call with vmap's batch in front, whose bounds error
    names what the user wrote: the axis, the position in one element's indices, and which
    element (contract section 12), as the call of that element alone would."""

    def __init__(self, host: Host, choice: Configured, axis: int) -> None:
        self.host = host
        self.choice = choice
        self.axis = axis  # the user's, non-negative: the batched call's is shifted

    def __call__(self, batch: int, *arrays: Any) -> Any:
        try:
            return self.host(self.choice, batch, *arrays)
        except IndexError:
            if batch == 0:
                raise
            error = _in_batch_element(batch, self.axis, arrays[0], arrays[1])
            if error is None:  # not an index out of bounds: as it came
                raise
            raise error from None


def _in_batch_element(batch: int, axis: int, data: Any, indices: Any) -> IndexError | None:
    """The eager call's IndexError for the first bad index of the batched ``indices``, in
    C order (so in the first batch element that has one), and that element's place."""
    size = data.shape[batch + axis]
    bad = (indices < -size) | (indices >= size)
    if not bad.any():
        return None
    position = tuple(int(p) for p in np.unravel_index(int(np.argmax(bad)), bad.shape))
    error = out_of_bounds_error(int(indices[position]), position[batch:], axis, size)
    element = position[0] if batch == 1 else position[:batch]
    msg = f"{error} (in batch element {element})"
    return IndexError(msg)


def _ffi_run(run_host: _Unbatched) -> _jax_ffi.Run:
    """The FFI target's run: the pipeline on the views of XLA's buffers, vmap's batch in
    front; the result made in XLA's result buffer ``out`` where the backend makes it with
    ``empty_aligned``, else copied there."""

    def run(batch: int, arrays: tuple[Any, ...], out: Any) -> None:
        with results_into(out):
            result = run_host(batch, *arrays)
        if result is not out:
            np.copyto(out, result)

    return run


def _host(run_host: _Unbatched, rank: int) -> Any:
    """The callback: one run of the pipeline on the host's NumPy arrays, vmap's batch in
    front."""

    def run(data: Any, *rest: Any) -> Any:
        batch = np.ndim(data) - rank  # vmap's dimensions, in front
        arrays = [np.asarray(a) for a in (data, *rest)]
        return np.asarray(run_host(batch, *arrays))

    return run


def _scatter(axis: int, reduction: str, calls: Any, lowered: _Lowered) -> Any:
    import jax

    @jax.custom_vjp
    def scatter(data: Any, indices: Any, updates: Any) -> Any:
        shape = jax.ShapeDtypeStruct(data.shape, data.dtype)  # type: ignore[no-untyped-call]
        return lowered(shape, data, indices, updates)

    def forward(data: Any, indices: Any, updates: Any) -> Any:
        out = scatter(data, indices, updates)
        if reduction in ("add", "none"):  # their gradients read g and indices alone
            return out, (None, indices, None, None)
        return out, (data, indices, updates, out)

    def backward(saved: Any, g: Any) -> Any:
        import jax.numpy as jnp

        data, indices, updates, out = saved
        g = jnp.asarray(g)  # a cotangent may come as a NumPy array (jax.test_util does that)
        d_data, d_updates = scatter_vjp(
            _rules(calls), g, data, indices, updates, out, axis, reduction
        )
        return d_data, None, d_updates

    scatter.defvjp(forward, backward)
    return scatter


def _gather(axis: int, calls: Any, shape: tuple[int, ...], lowered: _Lowered) -> Any:
    import jax

    @jax.custom_vjp
    def gather(data: Any, indices: Any) -> Any:
        result = jax.ShapeDtypeStruct(indices.shape, data.dtype)  # type: ignore[no-untyped-call]
        return lowered(result, data, indices)

    def forward(data: Any, indices: Any) -> Any:
        return gather(data, indices), indices  # data's shape is known: not a residual

    def backward(indices: Any, g: Any) -> Any:
        import jax.numpy as jnp

        return gather_vjp(_rules(calls), jnp.asarray(g), shape, indices, axis), None

    gather.defvjp(forward, backward)
    return gather


def _rules(calls: Calls) -> Rules:
    """The gradient's operations in JAX: ``calls`` (traced: FFI calls or callbacks again)."""
    import jax.numpy as jnp

    return Rules(
        xp=jnp,
        scatter=calls.scatter,
        gather=calls.gather,
        conjugate=False,  # JAX's cotangents of holomorphic functions are not conjugated
        device=lambda array: None,  # traced values have no device: JAX places the result
    )
