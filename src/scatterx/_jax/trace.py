"""JAX traces: inside ``jax.jit``, ``jax.vmap`` or ``jax.grad`` a call runs on XLA's buffers.

A traced value has a shape and a dtype but no buffer, so the call is checked (contract
sections 4, 10 and 14) and its backend chosen at trace time, on stand-in NumPy arrays of the
same metadata, and computed when the traced function runs: on the CPU by the XLA FFI
target of :mod:`scatterx._jax.ffi`, which runs the pipeline on views of XLA's own
buffers; elsewhere, and for what the target does not serve, by ``jax.pure_callback`` on
the host: JAX hands the callback NumPy arrays and takes its NumPy result back.

Under ``jax.vmap`` the callback gets every argument with the batch dimensions in front
(``vmap_method="broadcast_all"``), and one call does the whole batch: ScatterElements and
GatherElements along the shifted axis (batch coordinates, like every coordinate but the
axis, are kept), GatherND with ``batch_dims`` grown by the batch, ScatterND with each
index row given its batch's position in front. An index out of bounds raises the error
of the call of that batch element alone, its element named.

Each traced call is a ``jax.custom_vjp`` function: its gradient (contract section 9) is
made of scatterx calls and ``jax.numpy``, by :mod:`scatterx._gradients`, so ``jax.grad`` of a
gradient works too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .._check import GATHER_ND, OPERATIONS, SCATTER_ND, derive
from .._config import Configured
from .._errors import out_of_bounds_error
from .._gradients import (
    Calls,
    Rules,
    fold_batch,
    gather_nd_vjp,
    gather_vjp,
    scatter_nd_vjp,
    scatter_vjp,
)
from .._plan import Decision, decide, explain_plan
from .._request import GatherNDRequest, GatherRequest, Request, ScatterNDRequest, ScatterRequest
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
    if choice.names is not None:
        decide(stand_in(request), choice)
    lowered = _Lowered(_on_host(request), choice, request)
    rules = _rules(Calls(choice, request, _gradient_run))
    if isinstance(request, (GatherRequest, GatherNDRequest)):
        return _gather(_gather_rule(request, rules), lowered)(*request.arrays)
    return _scatter(_scatter_rule(request, rules), request.reduction, lowered)(*request.arrays)


def _on_host(request: Request) -> Host:
    """The run of the host's arrays of a traced call (the FFI target's views of XLA's
    buffers, or the callback's NumPy arrays): they have the traced values' metadata,
    checked at trace time. Under ``jax.vmap`` (its batch dimensions in front) they make
    the request of the batch (:func:`_batched`), checked by nothing again."""

    def host(choice: Configured, batch: int, *arrays: Any, out: Any = None) -> Any:
        if batch == 0:
            made = request.with_arrays(arrays, NUMPY, "cpu")
        else:
            made = _batched(request, batch, arrays)
        if out is None:
            return run(made, choice)
        return run(made._replace(out=out), choice, out)

    return host


def _batched(request: Request, batch: int, arrays: tuple[Any, ...]) -> Request:
    """The one request of a vmap batch: ``arrays`` have ``batch`` dimensions in front."""
    if isinstance(request, ScatterNDRequest):
        data, indices, updates = arrays
        rows = (data, fold_batch(np, indices, batch, None), updates)
        return derive(SCATTER_ND, request, rows, 0, request.reduction)
    if isinstance(request, GatherNDRequest):
        return derive(GATHER_ND, request, arrays, request.batch_dims + batch)
    operation = OPERATIONS[request.operation]
    reduction = getattr(request, "reduction", None)
    return derive(operation, request, arrays, request.axis + batch, reduction)


class _Columns(NamedTuple):
    """What index values are checked against, per column of an index row (one column for
    the elements operations): the dimension of ``data`` indexed, and its size."""

    axes: tuple[int, ...]
    sizes: tuple[int, ...]


def _columns(request: Request) -> _Columns:
    if isinstance(request, (ScatterRequest, GatherRequest)):
        return _Columns((request.axis,), (request.axis_size,))
    first = request.batch_dims if isinstance(request, GatherNDRequest) else 0
    axes = tuple(range(first, first + request.depth))
    return _Columns(axes, tuple(int(request.data.shape[a]) for a in axes))


def _gradient_run(request: Request, choice: Configured) -> Any:
    """The run of a gradient's call: traced in turn (``jax.grad`` of a gradient, or under
    ``jit``), else eager."""
    if request.device is TRACED:
        return traced(request, choice)
    return run(request, choice)


class _Lowered:
    """The computation of a traced call: the FFI target's call on the CPU where it serves
    the call, else (and on other platforms) the host callback."""

    def __init__(self, host: Host, choice: Configured, request: Request) -> None:
        unbatched = _Unbatched(host, choice, _columns(request))
        self.callback = _host(unbatched, request.data.ndim)
        self.shape = request.result_shape  # unbatched: vmap's dimensions come in front
        self.key: int | None = None
        self.scatter = isinstance(request, (ScatterRequest, ScatterNDRequest))
        if _jax_ffi.serves(request) is None:
            self.key = _jax_ffi.key(request, choice, _ffi_run(unbatched))

    def result(self, dtype: Any) -> Any:
        """The traced call's result, a shape and ``dtype``."""
        import jax

        return jax.ShapeDtypeStruct(self.shape, dtype)  # type: ignore[no-untyped-call]

    def __call__(self, result: Any, *arrays: Any) -> Any:
        import jax

        if self.key is None:
            return jax.pure_callback(self.callback, result, *arrays, vmap_method="broadcast_all")
        return _jax_ffi.call(
            self.key, result, *arrays, scatter=self.scatter, callback=self.callback
        )


class _Unbatched:
    """The pipeline's run of a traced call with vmap's batch in front, whose bounds error
    names what the user wrote: the axis, the position in one element's indices, and which
    element (contract section 12), as the call of that element alone would."""

    def __init__(self, host: Host, choice: Configured, columns: _Columns) -> None:
        self.host = host
        self.choice = choice
        self.columns = columns  # the user's: the batched call's axes are shifted

    def __call__(self, batch: int, *arrays: Any, out: Any = None) -> Any:
        try:
            return self.host(self.choice, batch, *arrays, out=out)
        except IndexError:
            if batch == 0:
                raise
            error = _in_batch_element(batch, self.columns, arrays[1])
            if error is None:  # not an index out of bounds: as it came
                raise
            raise error from None


def _in_batch_element(batch: int, columns: _Columns, indices: Any) -> IndexError | None:
    """The eager call's IndexError for the first bad index of the batched ``indices``, in
    C order (so in the first batch element that has one), and that element's place."""
    sizes = np.broadcast_to(np.asarray(columns.sizes), indices.shape)
    bad = (indices < -sizes) | (indices >= sizes)
    if not bad.any():
        return None
    position = tuple(int(p) for p in np.unravel_index(int(np.argmax(bad)), bad.shape))
    column = position[-1] % len(columns.axes)  # 0 where one column serves every index
    axis, size = columns.axes[column], columns.sizes[column]
    error = out_of_bounds_error(int(indices[position]), position[batch:], axis, size)
    element = position[0] if batch == 1 else position[:batch]
    msg = f"{error} (in batch element {element})"
    return IndexError(msg)


def _ffi_run(run_host: _Unbatched) -> _jax_ffi.Run:
    """The FFI target's run: the pipeline on the views of XLA's buffers, vmap's batch in
    front; the result made in XLA's result buffer ``out`` where the backend makes it with
    ``empty_aligned``, else copied there. Where ``out`` is ``data`` (donated), the call
    runs in place, as with ``out=data``: nothing of ``data`` is copied."""

    def run(batch: int, arrays: tuple[Any, ...], out: Any) -> None:
        if arrays[0] is out:
            run_host(batch, *arrays, out=out)
            return
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


#: A scatter's gradient rule: (g, data, indices, updates, out) -> (d data, d updates).
ScatterRule = Callable[..., tuple[Any, Any]]
#: A gather's gradient rule: (g, indices) -> d data.
GatherRule = Callable[[Any, Any], Any]


def _scatter_rule(request: ScatterRequest | ScatterNDRequest, rules: Rules) -> ScatterRule:
    """The gradient of a traced scatter (contract section 9; ScatterND: none and add)."""
    reduction = request.reduction
    if isinstance(request, ScatterNDRequest):
        return lambda g, data, indices, updates, out: scatter_nd_vjp(rules, g, indices, reduction)
    axis = request.axis

    def rule(g: Any, data: Any, indices: Any, updates: Any, out: Any) -> tuple[Any, Any]:
        return scatter_vjp(rules, g, data, indices, updates, out, axis, reduction)

    return rule


def _gather_rule(request: GatherRequest | GatherNDRequest, rules: Rules) -> GatherRule:
    """The gradient of a traced gather: ``g`` added into zeros of data's shape."""
    shape = request.shape
    if isinstance(request, GatherNDRequest):
        batch_dims = request.batch_dims
        return lambda g, indices: gather_nd_vjp(rules, g, shape, indices, batch_dims)
    axis = request.axis
    return lambda g, indices: gather_vjp(rules, g, shape, indices, axis)


def _scatter(rule: ScatterRule, reduction: str, lowered: _Lowered) -> Any:
    import jax

    @jax.custom_vjp
    def scatter(data: Any, indices: Any, updates: Any) -> Any:
        return lowered(lowered.result(data.dtype), data, indices, updates)

    def forward(data: Any, indices: Any, updates: Any) -> Any:
        out = scatter(data, indices, updates)
        if reduction in ("add", "none"):  # their gradients read g and indices alone
            return out, (None, indices, None, None)
        return out, (data, indices, updates, out)

    def backward(saved: Any, g: Any) -> Any:
        import jax.numpy as jnp

        # A cotangent may come as a NumPy array (jax.test_util does that).
        d_data, d_updates = rule(jnp.asarray(g), *saved)
        return d_data, None, d_updates

    scatter.defvjp(forward, backward)
    return scatter


def _gather(rule: GatherRule, lowered: _Lowered) -> Any:
    import jax

    @jax.custom_vjp
    def gather(data: Any, indices: Any) -> Any:
        return lowered(lowered.result(data.dtype), data, indices)

    def forward(data: Any, indices: Any) -> Any:
        return gather(data, indices), indices  # data's shape is known: not a residual

    def backward(indices: Any, g: Any) -> Any:
        import jax.numpy as jnp

        return rule(jnp.asarray(g), indices), None

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
        scatter_nd=calls.scatter_nd,
        gather_nd=calls.gather_nd,
    )
