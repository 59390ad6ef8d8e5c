"""The public operations and their explain(): each body one call of the pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _pipeline
from ._pipeline import GATHER, GATHER_ND, SCATTER, SCATTER_ND
from ._plan import Decision


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
    return _pipeline.call(SCATTER, (data, indices, updates), axis, reduction, out, backend)


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
    return _pipeline.call(GATHER, (data, indices), axis, None, out, backend)


def explain(
    data: Any,
    indices: Any,
    updates: Any,
    /,
    *,
    axis: int = 0,
    reduction: str = "none",
    out: Any = None,
    backend: str | Sequence[str] | None = None,
) -> Decision:
    """Say which backend would run this call and why each other one would not.

    Validates the call as :func:`scatter_elements` does, ``out`` included, but computes
    nothing and writes nothing.

    Parameters
    ----------
    data, indices, updates : array
        As for :func:`scatter_elements`.
    axis : int, optional
        As for :func:`scatter_elements`.
    reduction : {"none", "add", "mul", "max", "min"}, optional
        As for :func:`scatter_elements`.
    out : array, optional
        As for :func:`scatter_elements`: the decision of the call that writes there
        (``data`` itself: in place).
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
    return _pipeline.explain(SCATTER, (data, indices, updates), axis, reduction, out, backend)


def explain_gather(
    data: Any,
    indices: Any,
    /,
    *,
    axis: int = 0,
    out: Any = None,
    backend: str | Sequence[str] | None = None,
) -> Decision:
    """Say which backend would run this gather and why each other one would not.

    Validates the call as :func:`gather_elements` does, but computes nothing.

    Parameters
    ----------
    data, indices : array
        As for :func:`gather_elements`, and so are the other parameters.
    axis : int, optional
        The axis.
    out : array, optional
        Where the gather would write (checked as :func:`gather_elements` checks it).
    backend : str or sequence of str, optional
        The backend(s) to choose among.

    Returns
    -------
    Decision
        As :func:`explain` returns.

    Examples
    --------
    >>> import numpy as np, scatterx
    >>> decision = scatterx.explain_gather(np.zeros(3), np.array([1]), backend="numpy")
    >>> decision.backend, decision.call
    ('numpy', 'gather_elements(numpy:ndarray float64 (3,), indices (1,), axis=0)')
    """
    return _pipeline.explain(GATHER, (data, indices), axis, None, out, backend)


def scatter_nd(
    data: Any,
    indices: Any,
    updates: Any,
    /,
    *,
    reduction: str = "none",
    out: Any = None,
    backend: str | Sequence[str] | None = None,
) -> Any:
    """ONNX ScatterND (opset 18): a copy of ``data`` with slices of ``updates`` scattered in.

    ``indices`` holds rows of ``k = indices.shape[-1]`` indices into the first ``k``
    dimensions of ``data`` (negative values count from the end); for each row ``i`` in C
    order, ``out[indices[i]] = f(out[indices[i]], updates[i])``, a slice of shape
    ``data.shape[k:]``, where ``f`` is given by ``reduction``. Rows that pick the same
    slice are applied in their order for every reduction: under ``"none"`` the last wins.
    Every backend returns the same bits (see the contract, section 14).

    Parameters
    ----------
    data : array
        The array to copy and update; at least one dimension.
    indices : array of int32 or int64
        At least one dimension; its last, ``k``, from 1 to the rank of ``data``.
    updates : array
        Of shape ``indices.shape[:-1] + data.shape[k:]``, and the dtype of ``data``.
    reduction : {"none", "add", "mul", "max", "min"}, optional
        How an update meets the value already there.
    out : array, optional
        Where to write the result, or ``data`` itself to update it in place, as for
        :func:`scatter_elements`.
    backend : str or sequence of str, optional
        The backend(s) to use, tried in order.

    Returns
    -------
    array
        The result, of the library, device, shape and dtype of ``data``; ``out`` itself
        where given.

    Raises
    ------
    ValueError, TypeError, IndexError
        For bad input, before anything is written.
    scatterx.BackendError
        When the backend(s) named cannot run the call; the message says why.

    Examples
    --------
    >>> import numpy as np, scatterx
    >>> data = np.zeros((3, 2))
    >>> rows = np.array([[2], [0], [2]])
    >>> scatterx.scatter_nd(data, rows, np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    array([[3., 4.],
           [0., 0.],
           [5., 6.]])
    >>> cells = np.array([[0, 1], [-1, 0]])
    >>> scatterx.scatter_nd(data, cells, np.array([7.0, 8.0]), reduction="add")
    array([[0., 7.],
           [0., 0.],
           [8., 0.]])
    """
    return _pipeline.call(SCATTER_ND, (data, indices, updates), None, reduction, out, backend)


def gather_nd(
    data: Any,
    indices: Any,
    /,
    *,
    batch_dims: int = 0,
    out: Any = None,
    backend: str | Sequence[str] | None = None,
) -> Any:
    """ONNX GatherND (opset 13): the slices of ``data`` that the rows of ``indices`` pick.

    The first ``batch_dims`` dimensions of ``data`` and ``indices`` are equal and paired;
    each row of ``k = indices.shape[-1]`` indices (negative values count from the end)
    picks the slice of its batch's ``data`` at those indices. See the contract, section 14.

    Parameters
    ----------
    data : array
        The array to read; at least one dimension.
    indices : array of int32 or int64
        At least one dimension; its last, ``k``, from 1 to ``data.ndim - batch_dims``.
    batch_dims : int, optional
        The number of leading batch dimensions, below the ranks of both arrays.
    out : array, optional
        Where to write the result, of its shape and the library, device and dtype of
        ``data``, overlapping neither input (as for :func:`gather_elements`).
    backend : str or sequence of str, optional
        The backend(s) to use, tried in order.

    Returns
    -------
    array
        A new array of shape ``indices.shape[:-1] + data.shape[batch_dims + k:]``, of the
        library, device and dtype of ``data``; ``out`` itself where given.

    Raises
    ------
    ValueError, TypeError, IndexError
        For bad input, before anything is computed.
    scatterx.BackendError
        When the backend(s) named cannot run the call; the message says why.

    Examples
    --------
    >>> import numpy as np, scatterx
    >>> data = np.arange(6).reshape(3, 2)
    >>> scatterx.gather_nd(data, np.array([[2], [0]]))
    array([[4, 5],
           [0, 1]])
    >>> scatterx.gather_nd(data, np.array([[1], [0], [1]]), batch_dims=1)
    array([1, 2, 5])
    """
    return _pipeline.call(GATHER_ND, (data, indices), batch_dims, None, out, backend)


def explain_nd(
    data: Any,
    indices: Any,
    updates: Any = None,
    /,
    *,
    reduction: str = "none",
    batch_dims: int = 0,
    out: Any = None,
    backend: str | Sequence[str] | None = None,
) -> Decision:
    """Say which backend would run a ScatterND or GatherND call, and why; computes nothing.

    A :func:`scatter_nd` with ``updates``, else a :func:`gather_nd`; as :func:`explain`.

    Parameters
    ----------
    data, indices, updates : array
        As for :func:`scatter_nd`; ``updates`` None for a :func:`gather_nd`.
    reduction, batch_dims : optional
        The scatter's reduction; the gather's batch dimensions.
    out : array, optional
        Where the call would write.
    backend : str or sequence of str, optional
        The backend(s) to choose among.

    Returns
    -------
    Decision
        As :func:`explain` returns.

    Examples
    --------
    >>> import numpy as np, scatterx
    >>> scatterx.explain_nd(np.zeros((3, 2)), np.array([[1]]), np.ones((1, 2))).call
    "scatter_nd(numpy:ndarray float64 (3, 2), indices (1, 1), reduction='none')"
    """
    if updates is None:
        return _pipeline.explain(GATHER_ND, (data, indices), batch_dims, None, out, backend)
    arrays = (data, indices, updates)
    return _pipeline.explain(SCATTER_ND, arrays, None, reduction, out, backend)
