"""JAX traces on the CPU as an XLA FFI target: the pipeline's run on XLA's own buffers.

Under ``jax.jit`` a call on the CPU is one ``jax.ffi.ffi_call`` of the typed FFI
(``api_version=1``) target ``scatterx_run``. Its handler is a numba ``cfunc``
(:func:`_handler`) that reads the ``XLA_FFI_CallFrame`` (the layout of
``xla/ffi/api/c_api.h`` in ``jax.ffi.include_dir()``, x86-64 and aarch64 alike): the
buffers' addresses and dimensions, and the one attribute ``key``, the traced call's entry
in :data:`_ENTRIES`. It then takes the GIL (numba's ``objmode``) and runs the pipeline
on NumPy views of the buffers, with XLA's result buffer lent to the backend's result
(:mod:`scatterx._results`): nothing is copied in or out, and the choice of backend
and its checks are the pipeline's, as in the host callback. An error becomes an
``XLA_FFI_Error`` (made by the API's ``XLA_FFI_Error_Create``) whose message is the
callback's, ``"IndexError: ..."``.

The target serves every traced call on the CPU; the host callback (:mod:`scatterx._jax.trace`)
serves the other platforms (the primitive of :mod:`scatterx._jax.donation` is lowered per
platform) and every call when numba is missing. Where a scatter's ``data`` is donated,
XLA hands its buffer over as the result's too, and the call runs in place.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .._request import Request
from . import donation

TARGET = "scatterx_run"
ROUTE = (
    f"jax trace -> numpy:ndarray by the XLA FFI target {TARGET!r} on the CPU "
    "(elsewhere by jax.pure_callback, a host callback), at run time"
)

_ERROR_CREATE = 48  # offsetof(XLA_FFI_Api, XLA_FFI_Error_Create)
_INVALID_ARGUMENT, _OUT_OF_RANGE = 3, 11

#: The pipeline's run of one traced call on the target's views: ``(batch, arrays, out)``.
Run = Callable[[int, tuple[Any, ...], Any], None]


class _Entry:
    """What the target needs of one traced call: the dtypes of its buffers, and its run."""

    __slots__ = ("dtypes", "rank", "run")

    def __init__(self, dtypes: tuple[np.dtype[Any], ...], rank: int, run: Run) -> None:
        self.dtypes = dtypes  # the arguments', then the result's
        self.rank = rank  # the result's, unbatched: vmap's dimensions come in front
        self.run = run


#: Every traced call's entry, by key; kept for the process (a compiled function may run at
#: any time). Filled under :data:`_LOCK`; the handler reads it without: entries are only
#: appended, and a key is handed to a trace after its entry is in the list.
_ENTRIES: list[_Entry] = []
_KEYS: dict[Any, int] = {}
_LOCK = threading.Lock()


class _Target(NamedTuple):
    """What XLA holds the address of once the target is registered, and what that uses."""

    handler: Any  # the numba cfunc: XLA calls its address
    serve: Any  # the njit dispatcher the handler calls, its objmode code included
    capsule: Any  # the capsule of the handler's address handed to XLA


#: Every handler whose address was handed to XLA, kept alive for the life of the process:
#: XLA may call it from any compiled function at any time and never lets go of it (only
#: the first is registered; one refused is kept too, as XLA may have seen it).
_KEPT: list[_Target] = []
#: Whether the first use has asked; then None where the target is registered, else why not.
_ASKED = False
_REASON: str | None = None
#: The first use's lock: the handler is compiled and registered once. XLA takes one
#: handler per name, and refuses a second at another address.
_SETUP_LOCK = threading.Lock()


def _new_locks_in_child() -> None:
    # A fork while another thread held a lock would leave the child's copy held forever.
    global _LOCK, _SETUP_LOCK
    _LOCK, _SETUP_LOCK = threading.Lock(), threading.Lock()


os.register_at_fork(after_in_child=_new_locks_in_child)


def serves(request: Request) -> str | None:
    """None where the target can run ``request`` on the CPU, else the reason it cannot.

    Every dtype scatterx takes on JAX arrays (bool, integers, floats, complex) has NumPy's
    bytes in XLA's CPU buffers, so only the target's own needs decide.
    """
    return _handler_error()


def _handler_error() -> str | None:
    """None once the target is registered with XLA, else why it cannot be: asked once per
    process, by one thread while the others wait (every trace asks, at trace time)."""
    global _ASKED, _REASON
    with _SETUP_LOCK:
        if not _ASKED:
            _REASON = _register()
            _ASKED = True
        return _REASON


def _register() -> str | None:
    """Compile the handler and register it with XLA (:data:`_SETUP_LOCK` held)."""
    try:
        import jax

        handler, serve = _handler()
    except ImportError as error:
        return f"the FFI target needs numba: {error}"
    except Exception as error:  # a numba that cannot compile the handler: the callback serves
        return f"the FFI target's handler does not compile: {error}"
    capsule = jax.ffi.pycapsule(handler.address)  # type: ignore[no-untyped-call]
    # Kept before XLA sees the address: from then on a compiled function may call it.
    _KEPT.append(_Target(handler, serve, capsule))
    try:
        jax.ffi.register_ffi_target(TARGET, capsule, platform="cpu")
    except Exception as error:  # another handler under the name: the callback serves
        return f"XLA refuses the FFI target: {error}"
    return None


def key(request: Request, choice: Any, run: Run) -> int:
    """The key of the traced call's entry: one per kind of call and choice, kept for the
    process (a compiled function may run at any time)."""
    dtypes = tuple(np.dtype(a.dtype) for a in request.arrays)
    result = dtypes[0]
    shapes = (request.shape, request.index_shape)  # an updates' shape follows from them
    kind = (type(request), shapes, dtypes, request.settings, choice)
    with _LOCK:
        found = _KEYS.get(kind)
        if found is None:
            found = _KEYS[kind] = len(_ENTRIES)
            _ENTRIES.append(_Entry((*dtypes, result), len(request.result_shape), run))
    return found


def call(key: int, result: Any, *arrays: Any, scatter: bool, callback: Any) -> Any:
    """The traced call of the target for the entry ``key`` (``callback`` off the CPU); a
    ``scatter``'s writes into ``data``'s buffer where the caller donated it
    (:mod:`scatterx._jax.donation`)."""
    return donation.bind(donation.Call(TARGET, key, scatter, callback), result, *arrays)


def _serve(meta: np.ndarray[Any, Any]) -> int:
    """The handler's Python part (the GIL held): run the entry on views of the buffers.

    ``meta``: the API's address, the key, the number of buffers, then for each buffer
    (the arguments, then the result) its address, rank and dimensions. Returns 0, or the
    address of an ``XLA_FFI_Error``.
    """
    words = meta.tolist()
    api = words[0]
    try:
        if not 0 <= words[1] < len(_ENTRIES):
            msg = f"the FFI target {TARGET!r} needs the key of a traced call; got {words[1]}"
            raise ValueError(msg)
        entry = _ENTRIES[words[1]]
        if words[2] != len(entry.dtypes):
            msg = f"the FFI target {TARGET!r} got {words[2]} buffers for {len(entry.dtypes)}"
            raise ValueError(msg)
        *inputs, out = _views(words, entry.dtypes)
        entry.run(out.ndim - entry.rank, tuple(inputs), out)
    except BaseException as error:  # nothing may unwind through XLA: it gets them all
        code = _OUT_OF_RANGE if isinstance(error, IndexError) else _INVALID_ARGUMENT
        return _error(api, f"{type(error).__name__}: {error}", code)
    return 0


def _views(words: list[int], dtypes: tuple[np.dtype[Any], ...]) -> list[Any]:
    """NumPy views of the buffers that ``words`` describe, the result's writable. Where XLA
    hands ``data``'s buffer over as the result's (a donated ``data``, aliased by
    :mod:`scatterx._jax.donation`), both are the one writable view: the run sees the call
    as in place (``out`` is ``data``)."""
    found, at = [], 3
    for dtype in dtypes:
        rank = words[at + 1]
        found.append((words[at], tuple(words[at + 2 : at + 2 + rank]), dtype))
        at += 2 + rank
    views = [_view(*buffer, writeable=False) for buffer in found[:-1]]
    if found[0] == found[-1] and views[0].size:
        views[0].flags.writeable = True
        return [*views, views[0]]
    return [*views, _view(*found[-1], writeable=True)]


def _view(address: int, shape: tuple[int, ...], dtype: np.dtype[Any], writeable: bool) -> Any:
    """A NumPy view of an XLA buffer (C order, as XLA's CPU buffers are)."""
    n_bytes = math.prod(shape) * dtype.itemsize
    if n_bytes == 0:
        return np.empty(shape, dtype)
    raw = np.frombuffer(memoryview((ctypes.c_char * n_bytes).from_address(address)), np.uint8)
    view = raw.view(dtype).reshape(shape)
    view.flags.writeable = writeable
    return view


class _ErrorArgs(ctypes.Structure):
    _fields_ = (
        ("struct_size", ctypes.c_size_t),
        ("extension_start", ctypes.c_void_p),
        ("message", ctypes.c_char_p),
        ("errc", ctypes.c_int),
    )


_ERROR_ARGS_SIZE = _ErrorArgs.errc.offset + ctypes.sizeof(ctypes.c_int)
_CREATE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_ErrorArgs))


def _error(api: int, message: str, code: int) -> int:
    """A new ``XLA_FFI_Error`` (XLA owns it once the handler returns it)."""
    create = _CREATE(ctypes.c_void_p.from_address(api + _ERROR_CREATE).value or 0)
    args = _ErrorArgs(_ERROR_ARGS_SIZE, None, message.encode(), code)
    return int(create(ctypes.byref(args)) or 0)


def _handler() -> tuple[Any, Any]:
    """The target's handler and the dispatcher it calls, compiled anew on each call: only
    :func:`_register` calls it, once per process. Numba is imported here, on first use."""
    import numba as nb

    from .frame import read_frame, read_metadata

    @nb.njit(nogil=False)
    def serve(frame: int) -> int:
        meta = read_frame(frame)
        with nb.objmode(status="int64"):
            status = _serve(meta)
        return status

    # The handler's C type is XLA_FFI_Error*(XLA_FFI_CallFrame*): an address both ways.
    @nb.cfunc(nb.types.int64(nb.types.int64))
    def handler(frame: int) -> int:
        if read_metadata(frame):
            return 0
        return serve(frame)

    return handler, serve
