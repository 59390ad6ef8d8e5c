"""Running a plan: the backend's call, ``out=``, and the hand-back to the caller's library."""

from __future__ import annotations

from typing import Any

from ._interop import NUMPY
from ._plan import Plan
from ._request import Request, ScatterRequest
from ._validate_out import settled


def execute(plan: Plan, like: Any) -> Any:
    """Run ``plan``; its result as an array of the library and device of ``like`` (the
    caller's ``data``).

    With ``out``, the result is in ``out`` (the carried ``out``, for a route), and the
    caller returns its own ``out``.
    """
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
        result = backend.gather_elements(request)
    if request.out is None or result is request.out:
        return result
    request.out[...] = result
    return request.out
