"""Running a checked call: decide its plan, run the backend, write ``out``, hand back.

Every mode ends here: the eager call, ``out=``, the forward of autograd, a torch
operator's body, a JAX callback, a Dask block. This is the only place a result is handed
back to the caller's library.
"""

from __future__ import annotations

from typing import Any

from ._adopt import adopt
from ._check import Operation, check
from ._check.out import settled
from ._config import Configured
from ._plan import Carried, Plan, decide
from ._request import Request, ScatterRequest
from .libraries.base import NUMPY


def run(request: Request, choice: Configured, out: Any = None, like: Any = None) -> Any:
    """Decide and run a checked ``request``: its result as an array of the library and
    device of ``like`` (the caller's ``data``; the request's own by default), or ``out``
    with the result in it."""
    like = request.data if like is None else like
    if out is None:
        return execute(decide(request, choice), like)
    request = settled(request)
    execute_into(decide(request, choice), like, request)
    return out


def run_carried(
    operation: Operation,
    views: tuple[Any, ...],
    carried: Carried,
    axis: Any,
    reduction: Any,
    choice: Configured,
) -> Any:
    """Check and run a call whose arrays were carried early to ``views`` (CPU tensors' NumPy
    views): the decision by the carried route, the result back in the caller's library."""
    request = check(operation, views, axis, reduction, None)
    result = _call(decide(request, choice, carried)[0], request)
    return carried.route.library.back(result, carried.arrays[0], request.dtype_key)


def run_arrays(
    operation: Operation,
    arrays: tuple[Any, ...],
    axis: Any,
    reduction: Any,
    out: Any,
    choice: Configured,
) -> Any:
    """A call that no host traces or records (a torch operator's body, on detached
    tensors): adopted, checked and run."""
    adopted = adopt(arrays, out)
    if adopted.carried is not None:
        return run_carried(operation, adopted.arrays, adopted.carried, axis, reduction, choice)
    result = run(check(operation, arrays, axis, reduction, out), choice, out, arrays[0])
    if out is not None and adopted.library is not None:
        adopted.library.wrote(out)
    return result


def execute(plan: Plan, like: Any) -> Any:
    """Run ``plan``; its result as an array of the library and device of ``like`` (the
    caller's ``data``)."""
    backend, route, request = plan
    if route is None:
        return _call(backend, request)
    if route.carrier == NUMPY:
        return route.library.back(_call(backend, request), like, request.dtype_key)
    with route.library.running(like):  # CUDA: the caller's device and stream
        return route.library.back(_call(backend, request), like, request.dtype_key)


def execute_into(plan: Plan, like: Any, checked: Request) -> None:
    """Run ``plan`` of a call with ``out``: the result ends up in ``out``.

    ``checked`` is the request whose ``out`` was checked against the inputs' memory
    already; a request carried since is checked here, as the backend receives it.
    """
    backend, route, request = plan
    if request is not checked:
        request = settled(request)
    if route is None or route.carrier == NUMPY:
        _call(backend, request)
        return
    with route.library.running(like):
        _call(backend, request)


def _call(backend: Any, request: Request) -> Any:
    """Run ``request`` on ``backend``. With ``out``, the result ends up there: a backend that
    returned a new array (or cannot write into ``out``) has it copied in, once it succeeded."""
    if type(request) is ScatterRequest:
        result = backend.scatter_elements(request)
    else:
        result = getattr(backend, request.operation)(request)
    if request.out is None or result is request.out:
        return result
    request.out[...] = result
    return request.out
