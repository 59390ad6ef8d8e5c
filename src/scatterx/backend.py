"""What a backend author needs, in one place: the seam between scatterx and its backends.

A backend is an object with the members of :class:`Backend`, published under the entry
point group ``scatterx.backends`` (or registered in a process with
:func:`register_backend`). The front-end validates each call once and hands the backend a
:class:`ScatterRequest`; the backend raises :func:`out_of_bounds_error` for the first bad
index, and :class:`BackendError` reaches the user when no backend can run a call.

A backend that runs ScatterND and GatherND as ScatterElements and GatherElements (contract
section 14) shares the translation: :func:`nd_shapes`, :func:`row_positions` (every index
checked), :func:`lined_up` and :func:`nd_as_scatter_elements` /
:func:`nd_as_gather_elements` (``scatterx._nd_elements``).

Examples
--------
A backend annotated with the protocol is checked by mypy:

>>> from scatterx.backend import Backend
>>> import scatterx_numpy
>>> backend: Backend = scatterx_numpy.backend
>>> backend.name
'numpy'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ._check.arguments import check_string_values
from ._dtypes import DTYPE_KEYS, DTYPE_REDUCTIONS, REDUCTIONS, dtype_key
from ._errors import BackendError, out_of_bounds_error
from ._nd_elements import (
    NDShapes,
    first_bad_row_index,
    lined_up,
    nd_as_gather_elements,
    nd_as_scatter_elements,
    nd_shapes,
    row_index_error,
    row_positions,
)
from ._pipeline import GATHER, SCATTER, block
from ._protocol import (
    Backend,
    ComputesND,
    ConvertsArrays,
    GathersElements,
    SkipsAutomatic,
    TransientReason,
)
from ._registry import register_backend
from ._request import (
    ElementsRequest,
    GatherNDRequest,
    GatherRequest,
    Request,
    ScatterNDRequest,
    ScatterRequest,
)
from ._results import HUGE_PAGE, lent
from ._results import buffer as pooled_buffer

__all__ = [
    "ALIGNED_FROM_BYTES",
    "ALIGNMENT",
    "DTYPE_KEYS",
    "DTYPE_REDUCTIONS",
    "REDUCTIONS",
    "Backend",
    "BackendError",
    "ComputesND",
    "ConvertsArrays",
    "ElementsRequest",
    "GatherNDRequest",
    "GatherRequest",
    "GathersElements",
    "NDShapes",
    "NumpyArrays",
    "Request",
    "ScatterNDRequest",
    "ScatterRequest",
    "SkipsAutomatic",
    "TransientReason",
    "block_call",
    "block_gather",
    "check_string_values",
    "dtype_key",
    "empty_aligned",
    "first_bad_row_index",
    "lined_up",
    "nd_as_gather_elements",
    "nd_as_scatter_elements",
    "nd_shapes",
    "out_of_bounds_error",
    "register_backend",
    "row_index_error",
    "row_positions",
    "unserved",
]


#: The alignment of results: what JAX's DLPack needs to take a buffer without a copy (and a
#: cache line).
ALIGNMENT = 64
#: Results smaller than this come from ``np.empty``: aligning costs more than the copy JAX
#: makes of them.
ALIGNED_FROM_BYTES = 1 << 16
#: Results from this size start on a 2 MiB boundary. glibc maps memory of every call anew
#: for them (its mmap threshold stops growing at 32 MiB), NumPy asks for transparent huge
#: pages, and only the whole 2 MiB pages of a buffer get one: aligned, the first 2 MiB
#: fault once, not 512 times (docs/performance.md, "Fresh results"). Their memory is kept
#: for the next result of the size once they are dropped (``scatterx._results``).
PAGE_ALIGNED_FROM_BYTES = 1 << 25


def empty_aligned(shape: tuple[int, ...], dtype: Any) -> np.ndarray[Any, Any]:
    """A new C-ordered array whose data is ``ALIGNMENT``-byte aligned, for a result.

    A result goes back to its caller's library through DLPack (see the contract, section
    6); JAX takes a buffer there without a copy only when it is 64-byte aligned, and NumPy
    aligns large buffers to 16 bytes. Results under ``ALIGNED_FROM_BYTES``, and object and
    string dtypes (which no other library takes), come from ``np.empty``. Inside a call
    of the JAX FFI target the first array of the result's shape and dtype is XLA's own
    result buffer, so the result is made there. Results over ``PAGE_ALIGNED_FROM_BYTES``
    start on a 2 MiB page and take the memory of a dropped result of their size where one
    is held, its pages already mapped (at most ``SCATTERX_RESULT_POOL_BYTES`` held, 256 MiB
    by default; 0 holds none).

    Parameters
    ----------
    shape : tuple of int
        The result's shape.
    dtype : dtype
        The result's dtype.

    Returns
    -------
    numpy.ndarray
        Uninitialised, C-ordered, aligned.

    Examples
    --------
    >>> import numpy as np
    >>> from scatterx.backend import empty_aligned
    >>> out = empty_aligned((300, 500), np.float32)
    >>> out.ctypes.data % 64, out.shape, out.flags.c_contiguous
    (0, (300, 500), True)
    """
    dtype = np.dtype(dtype)
    given = lent(tuple(shape), dtype)  # XLA's result buffer, in the FFI target's call
    if given is not None:
        return given
    size = math.prod(shape) * dtype.itemsize
    if size < ALIGNED_FROM_BYTES or dtype.hasobject or dtype.kind in "TUS":
        return np.empty(shape, dtype)
    if size + ALIGNMENT > PAGE_ALIGNED_FROM_BYTES:
        buffer = pooled_buffer(size + HUGE_PAGE)
        alignment = HUGE_PAGE
    else:
        buffer = np.empty(size + ALIGNMENT, np.uint8)
        alignment = ALIGNMENT
    start = -buffer.ctypes.data % alignment
    aligned: np.ndarray[Any, Any] = buffer[start : start + size].view(dtype).reshape(shape)
    return aligned


def block_call(
    data: Any, indices: Any, updates: Any, axis: int, reduction: str
) -> tuple[str, Callable[[], Any]]:
    """An in-memory call that a backend of chunked arrays makes from one of its tasks.

    Validated as :func:`scatterx.scatter_elements` validates it, its backend chosen among
    those serving the blocks' type (a configured choice holds where it names one of them,
    else automatic priority), but not yet run: the chunked backend learns which backend
    will run it (to share the cores with it, say) before it calls it.

    Parameters
    ----------
    data, indices, updates : array
        The blocks, in memory.
    axis : int
        The axis, non-negative.
    reduction : str
        The reduction.

    Returns
    -------
    tuple of (str, callable)
        The name of the backend chosen, and the call, which returns the result.

    Examples
    --------
    >>> import numpy as np
    >>> from scatterx.backend import block_call
    >>> name, run = block_call(np.zeros(3), np.array([2]), np.array([1.0]), 0, "add")
    >>> name, run()
    ('numpy', array([0., 0., 1.]))
    """
    return block(SCATTER, (data, indices, updates), axis, reduction)


def block_gather(data: Any, indices: Any, axis: int) -> tuple[str, Callable[[], Any]]:
    """The gather that a backend of chunked arrays makes from one of its tasks.

    As :func:`block_call`, for ``gather_elements``.

    Parameters
    ----------
    data, indices : array
        As for :func:`block_call`.
    axis : int
        Likewise.

    Returns
    -------
    tuple of (str, callable)
        As :func:`block_call` returns.

    Examples
    --------
    >>> import numpy as np
    >>> from scatterx.backend import block_gather
    >>> name, run = block_gather(np.array([5.0, 6.0, 7.0]), np.array([2, -3]), 0)
    >>> name, run()
    ('numpy', array([7., 5.]))
    """
    return block(GATHER, (data, indices), axis)


def unserved(
    capabilities: Mapping[str, frozenset[str]],
    request: Request,
    declined: Mapping[str, str] | None = None,
) -> str | None:
    """Why ``capabilities`` do not cover ``request``'s dtype and reduction, or None.

    A ready-made ``can_run`` for a backend whose only limits are its dtypes and reductions.
    A gather has no reduction: a dtype served for any reduction is served for a gather.

    Parameters
    ----------
    capabilities : Mapping of str to frozenset of str
        The backend's ``capabilities``.
    request : Request
        The call.
    declined : Mapping of str to str, optional
        Why the backend does not serve a dtype, by dtype key (default: "dtype ... is
        not served").

    Returns
    -------
    str or None
        The reason, or None when the backend can run the call.

    Examples
    --------
    >>> import numpy as np
    >>> from scatterx.backend import unserved
    >>> from scatterx._check import normalise
    >>> request = normalise(np.zeros(2), np.array([1]), np.ones(1), 0, "max")
    >>> unserved({"float64": frozenset({"add"})}, request)
    "reduction 'max' is not served for float64"
    >>> unserved({"float32": frozenset({"max"})}, request)
    'dtype float64 is not served'
    """
    served = capabilities.get(request.dtype_key)
    if served is None:
        why = (declined or {}).get(request.dtype_key)
        return why or f"dtype {request.dtype_key} is not served"
    reduction = getattr(request, "reduction", None)
    if reduction is None:  # a gather
        return None
    if reduction not in served:
        return f"reduction {reduction!r} is not served for {request.dtype_key}"
    return None


class NumpyArrays:
    """Members of a backend of ``numpy.ndarray``: its array type and its test-data moves."""

    array_types: tuple[str, ...] = ("numpy:ndarray",)

    def from_numpy(self, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """``array`` itself (:meth:`ConvertsArrays.from_numpy`): the backend's arrays are
        NumPy's."""
        return array

    def to_numpy(self, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """``array`` as a base-class ndarray (:meth:`ConvertsArrays.to_numpy`)."""
        return np.asarray(array)
