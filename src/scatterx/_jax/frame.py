"""Reading XLA's ``XLA_FFI_CallFrame`` in numba code: the offsets of ``c_api.h``'s structs.

Only :mod:`scatterx._jax.ffi`'s handler imports this module (it imports numba). Offsets
are those of the C structs on a 64-bit platform: every pointer, ``size_t`` and
``int64_t`` is 8 bytes, an enum 4 (padded to 8 before a pointer).

Nothing here is set up on first use but the compiles of the ``njit`` functions, and those
happen once, while the handler is compiled under :mod:`scatterx._jax.ffi`'s first-use
lock (numba's own compiler lock guards them besides); the handler's compiled code holds
them from then on.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np
from numba.core import types
from numba.extending import intrinsic

# XLA_FFI_CallFrame: struct_size, extension_start, api, ctx, stage (padded), then
# XLA_FFI_Args at 40, XLA_FFI_Rets at 80 (both: struct_size, extension_start, size,
# types, args/rets) and XLA_FFI_Attrs at 120 (struct_size, extension_start, size, types,
# names, attrs).
_EXTENSION, _API = 8, 16
_N_ARGS, _ARGS = 56, 72
_N_RETS, _RETS = 96, 112
_N_ATTRS, _ATTRS = 136, 160
# XLA_FFI_Buffer: struct_size, extension_start, dtype (padded), data, rank, dims.
_DATA, _RANK, _DIMS = 24, 32, 40
# XLA_FFI_Scalar: dtype (padded), value.
_SCALAR_VALUE = 8
# XLA_FFI_Metadata_Extension: {struct_size, type (padded), next}, metadata; and
# XLA_FFI_Metadata: struct_size, {struct_size, extension_start, major, minor}, traits.
_EXTENSION_TYPE, _METADATA = 8, 24
_MAJOR, _MINOR, _TRAITS = 24, 28, 32
_EXTENSION_METADATA = 1
#: The API version this handler is written against (c_api.h's XLA_FFI_API_MAJOR/MINOR).
API_VERSION = (0, 1)


def _load64_typing(typingctx: Any, address: Any) -> Any:
    """The int64 at ``address``."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        pointer = builder.inttoptr(args[0], context.get_value_type(types.int64).as_pointer())
        return builder.load(pointer)

    return types.int64(types.int64), codegen


_load64: Any = intrinsic(_load64_typing)


def _load32_typing(typingctx: Any, address: Any) -> Any:
    """The int32 at ``address``, widened."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        pointer = builder.inttoptr(args[0], context.get_value_type(types.int32).as_pointer())
        return builder.sext(builder.load(pointer), context.get_value_type(types.int64))

    return types.int64(types.int64), codegen


_load32: Any = intrinsic(_load32_typing)


def _store32_typing(typingctx: Any, address: Any, value: Any) -> Any:
    """Write ``value`` as an int32 at ``address``."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        pointer = builder.inttoptr(args[0], context.get_value_type(types.int32).as_pointer())
        builder.store(builder.trunc(args[1], context.get_value_type(types.int32)), pointer)
        return context.get_dummy_value()

    return types.void(types.int64, types.int64), codegen


_store32: Any = intrinsic(_store32_typing)


@nb.njit(nogil=True)
def read_metadata(frame: int) -> bool:
    """Whether XLA asks for the handler's metadata (at registration); if so, answer it."""
    extension = _load64(frame + _EXTENSION)
    if extension == 0:
        return False
    if _load32(extension + _EXTENSION_TYPE) == _EXTENSION_METADATA:
        metadata = _load64(extension + _METADATA)
        _store32(metadata + _MAJOR, API_VERSION[0])
        _store32(metadata + _MINOR, API_VERSION[1])
        _store32(metadata + _TRAITS, 0)
    return True


@nb.njit(nogil=True)
def read_frame(frame: int) -> Any:
    """The frame as int64 words: the API's address, the attribute ``key`` (the first and
    only one; -1 if none), the number of buffers, then each buffer's (arguments, then
    results) address, rank and dimensions."""
    n_args, n_rets = _load64(frame + _N_ARGS), _load64(frame + _N_RETS)
    args, rets = _load64(frame + _ARGS), _load64(frame + _RETS)
    size = 3
    for i in range(n_args + n_rets):
        buffer = _load64(args + 8 * i) if i < n_args else _load64(rets + 8 * (i - n_args))
        size += 2 + _load64(buffer + _RANK)
    meta = np.empty(size, np.int64)
    meta[0] = _load64(frame + _API)
    meta[1] = -1
    if _load64(frame + _N_ATTRS) == 1:
        scalar = _load64(_load64(frame + _ATTRS))
        meta[1] = _load64(_load64(scalar + _SCALAR_VALUE))
    meta[2] = n_args + n_rets
    at = 3
    for i in range(n_args + n_rets):
        buffer = _load64(args + 8 * i) if i < n_args else _load64(rets + 8 * (i - n_args))
        rank = _load64(buffer + _RANK)
        dims = _load64(buffer + _DIMS)
        meta[at] = _load64(buffer + _DATA)
        meta[at + 1] = rank
        for d in range(rank):
            meta[at + 2 + d] = _load64(dims + 8 * d)
        at += 2 + rank
    return meta
