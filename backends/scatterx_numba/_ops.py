"""The reductions as scalar numba functions, one family per storage type of the dtype.

Every function here is ``f(old, new) -> value`` of contract.md section 2 and is inlined
into the kernels, so each kernel specialises on one of them at compile time.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba.core import types
from numba.extending import intrinsic

# Compiled functions that are only ever called from other compiled functions: no cache
# of their own is needed (they live inside the cached kernels).
_inline = nb.njit(inline="always")


def _half_to_float_typing(typingctx: Any, bits: Any) -> Any:
    """float16 bits (uint16) to float32: exact."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return types.float32(types.uint16), codegen


def _float_to_half_typing(typingctx: Any, value: Any) -> Any:
    """float32 to float16 bits, rounding to nearest even as NumPy does."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return types.uint16(types.float32), codegen


def _float_bits_typing(typingctx: Any, value: Any) -> Any:
    """The bits of a float32 as uint32."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.IntType(32))

    return types.uint32(types.float32), codegen


def _bits_float_typing(typingctx: Any, bits: Any) -> Any:
    """A uint32 read as the bits of a float32."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.uint32), codegen


# Typed as Any: they are called from compiled code only, never from Python.
_half_to_float: Any = intrinsic(_half_to_float_typing)
_float_to_half: Any = intrinsic(_float_to_half_typing)
_float_bits: Any = intrinsic(_float_bits_typing)
_bits_float: Any = intrinsic(_bits_float_typing)


@_inline
def _bf16_to_float(bits: Any) -> Any:
    return _bits_float(np.uint32(bits) << np.uint32(16))


@_inline
def _float_to_bf16(value: Any) -> Any:
    # Round to nearest even on the top 16 bits, as ml_dtypes does. A NaN becomes the quiet
    # NaN of its sign, as in ml_dtypes (rounding could carry its payload into infinity):
    # inf + -inf is x86's negative default NaN, so the sign is part of the answer.
    bits = _float_bits(value)
    if value != value:
        return np.uint16(0xFFC0) if bits >> np.uint32(31) else np.uint16(0x7FC0)
    bits += np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return np.uint16(bits >> np.uint32(16))


# ---- plain numbers (ints, uints, floats, complex; bool stored as uint8) -------------


@_inline
def take_new(old: Any, new: Any) -> Any:
    return new


@_inline
def add(old: Any, new: Any) -> Any:
    return old + new


@_inline
def mul(old: Any, new: Any) -> Any:
    return old * new


@_inline
def maximum(old: Any, new: Any) -> Any:
    # np.maximum exactly: a NaN already there stays, a NaN coming in wins, and of two
    # equal values (0.0 and -0.0) the new one is kept.
    return old if (old != old or old > new) else new


@_inline
def minimum(old: Any, new: Any) -> Any:
    return old if (old != old or old < new) else new


# ---- float16 and bfloat16, stored as uint16 bits ------------------------------------
# The value is computed in float32 and rounded once: float32 carries more than twice the
# bits of either format plus two, so this equals NumPy's and ml_dtypes' round-every-step
# arithmetic bit for bit (no double-rounding error is possible).


@_inline
def half_add(old: Any, new: Any) -> Any:
    return _float_to_half(_half_to_float(old) + _half_to_float(new))


@_inline
def half_mul(old: Any, new: Any) -> Any:
    return _float_to_half(_half_to_float(old) * _half_to_float(new))


# NumPy's float16 maximum and minimum keep the value already there on a tie (0.0 and
# -0.0), unlike its float32/float64 loops and ml_dtypes' bfloat16, which keep the new one.


@_inline
def half_max(old: Any, new: Any) -> Any:
    a = _half_to_float(old)
    return old if (a != a or a >= _half_to_float(new)) else new


@_inline
def half_min(old: Any, new: Any) -> Any:
    a = _half_to_float(old)
    return old if (a != a or a <= _half_to_float(new)) else new


@_inline
def bf16_add(old: Any, new: Any) -> Any:
    return _float_to_bf16(_bf16_to_float(old) + _bf16_to_float(new))


@_inline
def bf16_mul(old: Any, new: Any) -> Any:
    return _float_to_bf16(_bf16_to_float(old) * _bf16_to_float(new))


@_inline
def bf16_max(old: Any, new: Any) -> Any:
    a = _bf16_to_float(old)
    return old if (a != a or a > _bf16_to_float(new)) else new


@_inline
def bf16_min(old: Any, new: Any) -> Any:
    a = _bf16_to_float(old)
    return old if (a != a or a < _bf16_to_float(new)) else new
