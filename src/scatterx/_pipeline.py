"""The front-end as one pipeline: adopt -> request -> plan -> run, for every kind of call.

A call is adopted once (its arrays' library found, CPU tensors carried to NumPy views
where no backend serves them natively), checked once (:mod:`scatterx._validate`), decided
once (:mod:`scatterx._plan`) and run in one of a few modes that reuse the request and the
plan: eager, ``out=``, autograd (torch tensors that require grad), JAX trace. Nothing here
calls the public functions again; the autograd forward and the Dask blocks get the run of
the request they were given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from . import _jax, _registry, _torch_grad, _torch_ops
from ._config import Configured, configured
from ._interop import NUMPY, TRACED, Library, Route
from ._libraries import library_of
from ._plan import Carried, Decision, Plan, decide, decide_for_blocks, explain_plan
from ._registry import current
from ._request import GatherRequest, Request, ScatterRequest
from ._run import execute, execute_into
from ._validate import for_operators, normalise, normalise_gather
from ._validate_out import settled


class Adopted(tuple[tuple[Any, ...], "Library | None", "Carried | None"]):
    """A call's arrays as the pipeline takes them: ``(arrays, library, carried)``, a
    tuple with named members (made at C speed at every call).

    Attributes
    ----------
    arrays : tuple of array
        What the request is made of: the caller's arrays, or their NumPy views.
    library : Library or None
        The caller's array library; None for NumPy arrays and array-likes.
    carried : Carried or None
        How the arrays were carried to their NumPy views, where they were.
    """

    __slots__ = ()

    @property
    def arrays(self) -> tuple[Any, ...]:
        """What the request is made of."""
        return self[0]

    @property
    def library(self) -> Library | None:
        """The caller's array library; None for NumPy's."""
        return self[1]

    @property
    def carried(self) -> Carried | None:
        """How the arrays were carried early, where they were."""
        return self[2]

    def records(self, request: Request) -> bool:
        """Whether autograd records the call of ``request`` (views carried early: never)."""
        library = self.library
        return library is not None and self.carried is None and library.records(request)


def adopt(*arrays: Any) -> Adopted:
    """Find the library of a call's arrays (one lookup by type, remembered), and carry CPU
    tensors to their NumPy views where that gives the decision the DLPack route would give,
    only sooner.

    That is so for a library whose conversion itself proves the arrays fit the NumPy
    route (torch's ``Tensor.numpy()`` takes CPU tensors only, and fails for every flag
    that needs a check or a copy), when no backend serves the library natively: the
    route's decision is then the one made among the backends of NumPy arrays, on the
    carried arrays' metadata, which cost less to check.
    """
    return Adopted(_adopted(arrays))


def _adopted(arrays: tuple[Any, ...]) -> tuple[tuple[Any, ...], Library | None, Carried | None]:
    """:func:`adopt`'s ``(arrays, library, carried)`` as a plain tuple (the small call's)."""
    kind = type(arrays[0])
    known = _EARLY.get(kind)
    if known is None or known[0] is not _registry._current:
        known = _EARLY[kind] = _early_of(kind, arrays[0])
    library, route = known[1], known[2]
    if (
        route is None
        or type(arrays[1]) is not kind
        or (len(arrays) == 3 and type(arrays[2]) is not kind)
    ):
        return arrays, library, None
    carried = library.early(arrays)  # type: ignore[misc, union-attr]
    if carried is None:
        return arrays, library, None
    return carried, library, Carried((route, arrays))


#: By array type: the registry asked, the library, and the route of arrays carried early
#: (None where they are not: no library, no early carry, or a backend serves the type).
_EARLY: dict[type, tuple[_registry.Registry, Library | None, Route | None]] = {}


def _early_of(kind: type, array: Any) -> tuple[_registry.Registry, Library | None, Route | None]:
    registry = current()
    library = library_of(kind)
    if library is None or library.early is None or registry.serving_type(array):
        return registry, library, None
    return registry, library, library.early_route(kind)


def scatter(
    data: Any, indices: Any, updates: Any, axis: Any, reduction: Any, out: Any, backend: Any
) -> Any:
    """The pipeline of :func:`scatterx.scatter_elements`."""
    if out is None and type(data) is np.ndarray:  # indices and updates join it, or are refused
        request = normalise(data, indices, updates, axis, reduction)
        chosen, route, _ = decide(request, configured(backend))
        if route is None:
            return chosen.scatter_elements(request)
        return execute(Plan((chosen, route, request)), data)
    if out is data and type(data) is np.ndarray:  # in place: as above, no library to find
        request = normalise(data, indices, updates, axis, reduction, out)
        return run(request, configured(backend), None, out, data)
    if _compiled(data) or (out is not None and _traced(out, data, indices, updates)):
        return _operators_scatter(data, indices, updates, axis, reduction, out, backend)
    if out is None:
        arrays, library, carried = _adopted((data, indices, updates))
        if carried is not None:  # CPU tensors' NumPy views: eager, the small call's way
            request = normalise(arrays[0], arrays[1], arrays[2], axis, reduction)
            chosen = decide(request, configured(backend), carried)[0]  # by carried.route
            result = chosen.scatter_elements(request)
            return carried.route.library.back(result, data, request.dtype_key)
        if library is not None and library.traced(arrays):
            return _operators_scatter(data, indices, updates, axis, reduction, out, backend)
        request = normalise(arrays[0], arrays[1], arrays[2], axis, reduction)
        adopted = Adopted((arrays, library, None))
    else:
        adopted = _adopted_for_out(data)
        request = normalise(data, indices, updates, axis, reduction, out)
    return _dispatch(request, adopted, configured(backend), out, data)


def gather(data: Any, indices: Any, axis: Any, out: Any, backend: Any) -> Any:
    """The pipeline of :func:`scatterx.gather_elements`."""
    if out is None and type(data) is np.ndarray:
        request: Request = normalise_gather(data, indices, axis)
        return execute(decide(request, configured(backend)), data)
    if _compiled(data) or (out is not None and _traced(out, data, indices)):
        return _operators_gather(data, indices, axis, out, backend)
    if out is None:
        arrays, library, carried = _adopted((data, indices))
        if carried is not None:
            request = normalise_gather(arrays[0], arrays[1], axis)
            chosen: Any = decide(request, configured(backend), carried)[0]  # one that gathers
            result = chosen.gather_elements(request)
            return carried.route.library.back(result, data, request.dtype_key)
        if library is not None and library.traced(arrays):
            return _operators_gather(data, indices, axis, out, backend)
        request = normalise_gather(arrays[0], arrays[1], axis)
        adopted = Adopted((arrays, library, None))
    else:
        adopted = _adopted_for_out(data)
        request = normalise_gather(data, indices, axis, out)
    return _dispatch(request, adopted, configured(backend), out, data)


def _adopted_for_out(data: Any) -> Adopted:
    """An ``out=`` call's adoption: ``data``'s library, the caller's arrays as they are (the
    request holds them; none is carried early)."""
    return Adopted(((), library_of(type(data)), None))


def _operators_scatter(
    data: Any, indices: Any, updates: Any, axis: Any, reduction: Any, out: Any, backend: Any
) -> Any:
    """The call through torch's operators, its arguments checked as eagerly."""
    roles = {"data": data, "indices": indices, "updates": updates, "out": out}
    axis = for_operators(roles, axis, reduction)
    return _torch_ops.scatter(data, indices, updates, axis, reduction, out, backend)


def _operators_gather(data: Any, indices: Any, axis: Any, out: Any, backend: Any) -> Any:
    """The gather through torch's operators, its arguments checked as eagerly."""
    axis = for_operators({"data": data, "indices": indices, "out": out}, axis)
    return _torch_ops.gather(data, indices, axis, out, backend)


def _compiled(data: Any) -> bool:
    """Whether ``torch.compile`` traces a call of tensors (its operators take it; a call of
    other arrays inside a compiled function runs as it does eagerly)."""
    return _torch_ops.compiling() and _torch_ops.is_tensor(data)


def _traced(out: Any, *arrays: Any) -> bool:
    """Whether an ``out=`` call is traced by its library (torch's tracers: its operators)."""
    library = library_of(type(out))
    return library is not None and library.traced((*arrays, out))


def _dispatch(request: Request, adopted: Adopted, choice: Configured, out: Any, like: Any) -> Any:
    """Run a checked request in its mode: JAX trace, autograd, ``out=`` or eager."""
    if request.device is TRACED:
        return _jax.traced(request, Calls(choice), _host(request))
    if adopted.records(request):
        result = _torch_grad.recorded(request, out, Runner(choice, out, like))
    else:
        result = run(request, choice, adopted.carried, out, like)
    if out is not None and adopted.library is not None:
        adopted.library.wrote(out)  # written, and no error raised
    return result


def run(request: Request, choice: Configured, carried: Carried | None, out: Any, like: Any) -> Any:
    """Decide and run ``request``: its result, or ``out`` with the result in it."""
    if out is None:
        return execute(decide(request, choice, carried), like)
    request = settled(request)
    execute_into(decide(request, choice, carried), like, request)
    return out


class Calls(NamedTuple):
    """The pipeline's calls with the choice of the call they serve: a gradient's calls
    (and those of its gradient) keep it, and where it came from."""

    choice: Configured

    def scatter(self, data: Any, indices: Any, updates: Any, *, axis: int, reduction: str) -> Any:
        """:func:`scatterx.scatter_elements` with this choice."""
        return scatter(data, indices, updates, axis, reduction, None, self.choice)

    def gather(self, data: Any, indices: Any, *, axis: int) -> Any:
        """:func:`scatterx.gather_elements` with this choice."""
        return gather(data, indices, axis, None, self.choice)


class Runner(NamedTuple):
    """The run of a request that a mode makes (the detached tensors of autograd's forward)
    with the choice of the call it serves."""

    choice: Configured
    out: Any
    like: Any

    def __call__(self, request: Request) -> Any:
        return run(request, self.choice, None, self.out, self.like)

    @property
    def calls(self) -> Calls:
        """The calls of the gradient, with this choice (and none of the arrays)."""
        return Calls(self.choice)


def _host(request: Request) -> Callable[..., Any]:
    """The run of the host callback of a traced call on the NumPy arrays JAX hands it.

    They have the traced values' metadata, checked at trace time: the callback runs the
    traced request on them. Under ``jax.vmap`` (its batch dimensions in front) the call
    is another one, checked anew along the shifted axis.
    """

    def host(choice: Configured, batch: int, *arrays: Any) -> Any:
        if batch == 0:
            on_host = request.with_arrays(arrays, NUMPY, "cpu")
            return run(on_host, choice, None, None, arrays[0])
        axis = request.axis + batch
        if isinstance(request, GatherRequest):
            return gather(arrays[0], arrays[1], axis, None, choice)
        return scatter(arrays[0], arrays[1], arrays[2], axis, request.reduction, None, choice)

    return host


def explain(request: Request, adopted: Adopted, backend: Any) -> Decision:
    """The Decision of a checked call, as :func:`_dispatch` would make it; runs nothing."""
    if request.device is TRACED:
        return _jax.explain_traced(request, backend)
    if adopted.records(request):  # the forward runs on the detached tensors
        request = _torch_grad.detached(request)
    return explain_plan(request, backend, adopted.carried)


def explain_scatter(
    data: Any, indices: Any, updates: Any, axis: Any, reduction: Any, out: Any, backend: Any
) -> Decision:
    """The pipeline of :func:`scatterx.explain`, up to the decision."""
    if out is not None:  # checked as the call checks it (:func:`scatter`), out's memory too
        adopted = _adopted_for_out(data)
        request = settled(normalise(data, indices, updates, axis, reduction, out))
        return explain(request, adopted, backend)
    adopted = adopt(data, indices, updates)
    arrays = adopted.arrays
    return explain(normalise(arrays[0], arrays[1], arrays[2], axis, reduction), adopted, backend)


def explain_gather(data: Any, indices: Any, axis: Any, out: Any, backend: Any) -> Decision:
    """The pipeline of :func:`scatterx.explain_gather`, up to the decision."""
    if out is not None:
        adopted = _adopted_for_out(data)
        request = settled(normalise_gather(data, indices, axis, out))
        return explain(request, adopted, backend)
    adopted = adopt(data, indices)
    arrays = adopted.arrays
    return explain(normalise_gather(arrays[0], arrays[1], axis), adopted, backend)


def block_call(
    data: Any, indices: Any, updates: Any, axis: int, reduction: str
) -> tuple[str, Callable[[], Any]]:
    """See :func:`scatterx.backend.block_call`."""
    return _block(normalise(data, indices, updates, axis, reduction), data)


def block_gather(data: Any, indices: Any, axis: int) -> tuple[str, Callable[[], Any]]:
    """See :func:`scatterx.backend.block_gather`."""
    return _block(normalise_gather(data, indices, axis), data)


def _block(request: ScatterRequest | GatherRequest, like: Any) -> tuple[str, Callable[[], Any]]:
    plan = decide_for_blocks(request)
    return plan.backend.name, lambda: execute(plan, like)


_torch_ops.serve(scatter, gather)
