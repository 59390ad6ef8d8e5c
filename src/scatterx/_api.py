"""scatter_elements(), gather_elements() and explain(): normalise, validate, select, run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _torch_grad
from ._interop import NUMPY, TRACED, Library, library_of
from ._jax import explain_traced, gather_traced, scatter_traced
from ._registry import current
from ._request import GatherRequest, Request
from ._select import Choice, Decision, choose, explain_request
from ._validate import normalise
from ._validate_gather import normalise_gather
from ._validate_out import settled


def scatter_elements(
    data: Any,
    indices: Any,
    updates: Any,
    /,
    *,
    axis: int = 0,
    reduction: str = "none",
    out: Any = None,
    backend: str | Sequence[str] | None = None,
) -> Any:
    """ONNX ScatterElements (opset 18): a copy of ``data`` with ``updates`` scattered in.

    For each position ``i`` of ``indices`` in C order, with ``j = i`` except
    ``j[axis] = indices[i]`` (negative values count from the end),
    ``out[j] = f(out[j], updates[i])``, where ``f`` is given by ``reduction``.
    Every backend returns the same bits (see the contract).

    Parameters
    ----------
    data : array
        The array to copy and update; at least one dimension.
    indices : array of int32 or int64
        Same rank as ``data``; no longer than ``data`` on every dimension but ``axis``.
    updates : array
        Same shape as ``indices``, same dtype as ``data``.
    axis : int, optional
        The axis that ``indices`` index; negative counts from the end.
    reduction : {"none", "add", "mul", "max", "min"}, optional
        How an update meets the value already there. ``"none"``: the last update in C
        order wins.
    out : array, optional
        Where to write the result: writable, of the library, device, shape and dtype of
        ``data``, overlapping no input, or ``data`` itself to update it in place (as
        ``np.put_along_axis`` and ``Tensor.scatter_`` do). NumPy, CuPy and torch arrays
        (and other DLPack arrays of CPU or CUDA memory); not JAX or Dask arrays. Left
        exactly as it was when the call raises.
    backend : str or sequence of str, optional
        The backend(s) to use, tried in order; wins over ``use_backend``,
        ``set_backend`` and ``SCATTERX_BACKEND``.

    Returns
    -------
    array
        A new array of the library, device, dtype and shape of ``data``; ``out`` itself
        where given.

    Raises
    ------
    ValueError, TypeError, IndexError
        For bad input, before anything is computed (see the contract, section 4).
    scatterx.BackendError
        When the backend(s) named cannot run the call; the message says why.

    Examples
    --------
    >>> import numpy as np, scatterx
    >>> data = np.zeros((3, 3), dtype=np.float32)
    >>> indices = np.array([[1, 0, 2], [0, 2, 1]])
    >>> updates = np.array([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], dtype=np.float32)
    >>> scatterx.scatter_elements(data, indices, updates, axis=0)
    array([[2. , 1.1, 0. ],
           [1. , 0. , 2.2],
           [0. , 2.1, 1.2]], dtype=float32)
    >>> scatterx.scatter_elements(np.ones(4), np.array([1, 1, -1]), np.array([2.0, 3.0, 4.0]),
    ...                           reduction="mul")
    array([1., 6., 1., 4.])

    In place:

    >>> counts = np.zeros(3, dtype=np.int64)
    >>> _ = scatterx.scatter_elements(counts, np.array([2, 0, 2]), np.ones(3, np.int64),
    ...                               reduction="add", out=counts)
    >>> counts
    array([1, 0, 2])
    """
    if out is not None:
        if _torch_grad.compiling():
            return _torch_grad.eager(scatter_elements)(
                data, indices, updates, axis=axis, reduction=reduction, out=out, backend=backend
            )
        return _into(normalise(data, indices, updates, axis, reduction, out), out, backend)
    if type(data) is not np.ndarray:
        return _scatter_elements_routed(data, indices, updates, axis, reduction, backend)
    # NumPy data: the indices and updates join it, or the checks refuse them; no route.
    request = normalise(data, indices, updates, axis, reduction)
    return choose(request, backend)[0].scatter_elements(request)


def _scatter_elements_routed(
    data: Any, indices: Any, updates: Any, axis: Any, reduction: Any, backend: Any
) -> Any:
    """:func:`scatter_elements` of arrays of another library: native, routed or traced."""
    if _torch_grad.compiling():
        return _torch_grad.eager(scatter_elements)(
            data, indices, updates, axis=axis, reduction=reduction, backend=backend
        )
    early = carried_early(data, indices, updates)
    if early is not None:
        library, (carried_data, carried_indices, carried_updates) = early
        request = normalise(carried_data, carried_indices, carried_updates, axis, reduction)
        result = choose(request, backend)[0].scatter_elements(request)
        return library.back(result, data, request.dtype_key)
    request = normalise(data, indices, updates, axis, reduction)
    if request.device is TRACED:
        return scatter_traced(request, backend)
    if _torch_grad.records(request):
        return _torch_grad.scatter(request, backend)
    return run_chosen(choose(request, backend), request)


def gather_elements(
    data: Any,
    indices: Any,
    /,
    *,
    axis: int = 0,
    out: Any = None,
    backend: str | Sequence[str] | None = None,
) -> Any:
    """ONNX GatherElements (opset 13): the elements of ``data`` that ``indices`` point at.

    For each position ``i`` of ``indices``, with ``j = i`` except ``j[axis] = indices[i]``
    (negative values count from the end), ``out[i] = data[j]``. Every backend returns
    the same bits (see the contract, section 10).

    Parameters
    ----------
    data : array
        The array to read; at least one dimension.
    indices : array of int32 or int64
        Same rank as ``data``; no longer than ``data`` on every dimension but ``axis``.
    axis : int, optional
        The axis that ``indices`` index; negative counts from the end.
    out : array, optional
        Where to write the result: writable, of the shape of ``indices`` and the library,
        device and dtype of ``data``, overlapping neither input (as for
        :func:`scatter_elements`). Left exactly as it was when the call raises.
    backend : str or sequence of str, optional
        The backend(s) to use, tried in order; wins over ``use_backend``,
        ``set_backend`` and ``SCATTERX_BACKEND``.

    Returns
    -------
    array
        A new array of the shape of ``indices``, and of the library, device and dtype of
        ``data``; ``out`` itself where given.

    Raises
    ------
    ValueError, TypeError, IndexError
        For bad input, before anything is computed (see the contract, sections 4 and 10).
    scatterx.BackendError
        When the backend(s) named cannot run the call; the message says why.

    Examples
    --------
    >>> import numpy as np, scatterx
    >>> data = np.array([[1, 2], [3, 4]])
    >>> scatterx.gather_elements(data, np.array([[0, 0], [1, 0]]), axis=1)
    array([[1, 1],
           [4, 3]])
    >>> scatterx.gather_elements(np.array([10.0, 20.0, 30.0]), np.array([-1, 0, 0]))
    array([30., 10., 10.])
    """
    if out is not None:
        if _torch_grad.compiling():
            return _torch_grad.eager(gather_elements)(
                data, indices, axis=axis, out=out, backend=backend
            )
        return _into(normalise_gather(data, indices, axis, out), out, backend)
    if type(data) is not np.ndarray:
        return _gather_elements_routed(data, indices, axis, backend)
    request = normalise_gather(data, indices, axis)
    return run_chosen(choose(request, backend), request)


def _gather_elements_routed(data: Any, indices: Any, axis: Any, backend: Any) -> Any:
    """:func:`gather_elements` of arrays of another library: native, routed or traced."""
    if _torch_grad.compiling():
        return _torch_grad.eager(gather_elements)(data, indices, axis=axis, backend=backend)
    request = normalise_gather(data, indices, axis)
    if request.device is TRACED:
        return gather_traced(request, backend)
    if _torch_grad.records(request):
        return _torch_grad.gather(request, backend)
    return run_chosen(choose(request, backend), request)


def _into(request: Request, out: Any, backend: Any) -> Any:
    """The call of ``request`` with ``out=`` (contract section 7): the result written into
    ``out``, which is returned; ``out`` untouched when the call raises."""
    # JAX arrays and tracers were refused as ``out`` by the checks: none reaches here.
    if _torch_grad.records(request):
        if _torch_grad.grad_enabled():
            msg = (
                "out= cannot be used where autograd records the call (a tensor requires "
                "grad and grad mode is on): autograd does not see writes into out; use the "
                "tensor the call returns, or call under torch.no_grad()"
            )
            raise TypeError(msg)
        request = _torch_grad.detached(request)
    run_chosen(choose(request, backend), request)
    return out


def run_chosen(choice: Choice, request: Request) -> Any:
    """Run ``request`` on the backend chosen, natively or by its DLPack route.

    With ``out``, the result is in ``out`` (the carried ``out``, for a route) and the
    caller returns its own ``out``.
    """
    chosen, route = choice
    if route is None:
        return _run(chosen, request)
    if route.carrier == NUMPY:
        return route.back(_run(chosen, route.carry(request)), request)
    with route.library.running(request.data):  # CUDA: the caller's device and stream
        return route.back(_run(chosen, route.carry(request)), request)


def _run(backend: Any, request: Request) -> Any:
    """Run ``request`` on ``backend``. With ``out``, the result ends up there: a backend that
    returned a new array (or cannot write into ``out``) has it copied in, once it succeeded."""
    if request.out is None:
        return _call(backend, request)
    request = settled(request)
    result = _call(backend, request)
    if result is not request.out:
        request.out[...] = result
    return request.out


def _call(backend: Any, request: Request) -> Any:
    if isinstance(request, GatherRequest):
        return backend.gather_elements(request)
    return backend.scatter_elements(request)


def carried_early(data: Any, indices: Any, updates: Any) -> tuple[Library, tuple[Any, ...]] | None:
    """The arrays of a library carried to NumPy before anything else, where that gives the
    decision the DLPack route would give, only sooner; else None.

    That is so for a library whose conversion itself proves the arrays fit the NumPy
    route (torch's ``Tensor.numpy()`` takes CPU tensors only, and fails for every flag
    that needs a check or a copy), when no backend serves the library natively: the
    route's decision is then the one made among the backends of NumPy arrays, on the
    carried arrays' metadata. Validating the NumPy views saves the small call about 2
    microseconds; every other call takes the general path.
    """
    library = library_of(type(data))
    if library is None or not library.early or not type(indices) is type(data) is type(updates):
        return None
    carried = library.early(data, indices, updates)
    if carried is None or current().serving_type(data):
        return None
    return library, carried


def explain(
    data: Any,
    indices: Any,
    updates: Any,
    /,
    *,
    axis: int = 0,
    reduction: str = "none",
    backend: str | Sequence[str] | None = None,
) -> Decision:
    """Say which backend would run this call and why each other one would not.

    Validates the call as :func:`scatter_elements` does, but computes nothing.

    Parameters
    ----------
    data, indices, updates : array
        As for :func:`scatter_elements`.
    axis : int, optional
        As for :func:`scatter_elements`.
    reduction : {"none", "add", "mul", "max", "min"}, optional
        As for :func:`scatter_elements`.
    backend : str or sequence of str, optional
        As for :func:`scatter_elements`.

    Returns
    -------
    Decision
        The backend that would run (or None) and each other backend's reason.

    Examples
    --------
    >>> import numpy as np, scatterx
    >>> decision = scatterx.explain(np.zeros(3), np.array([1]), np.array([5.0]), backend="numpy")
    >>> decision.backend
    'numpy'
    >>> decision.source
    'backend='
    >>> print(str(decision).splitlines()[1])
      numpy: runs
    """
    return _explain(normalise(data, indices, updates, axis, reduction), backend)


def _explain(request: Request, backend: Any) -> Decision:
    if request.device is TRACED:
        return explain_traced(request, backend)
    if _torch_grad.records(request):  # the forward runs on the detached tensors
        request = _torch_grad.detached(request)
    return explain_request(request, backend)


def explain_gather(
    data: Any, indices: Any, /, *, axis: int = 0, backend: str | Sequence[str] | None = None
) -> Decision:
    """Say which backend would run this gather and why each other one would not.

    Validates the call as :func:`gather_elements` does, but computes nothing.

    Parameters
    ----------
    data, indices : array
        As for :func:`gather_elements`.
    axis : int, optional
        As for :func:`gather_elements`.
    backend : str or sequence of str, optional
        As for :func:`gather_elements`.

    Returns
    -------
    Decision
        The backend that would run (or None) and each other backend's reason.

    Examples
    --------
    >>> import numpy as np, scatterx
    >>> decision = scatterx.explain_gather(np.zeros(3), np.array([1]), backend="numpy")
    >>> decision.backend, decision.call
    ('numpy', 'gather_elements(numpy:ndarray float64 (3,), indices (1,), axis=0)')
    """
    return _explain(normalise_gather(data, indices, axis), backend)
