"""The reductions as scalar numba functions, one family per storage type of the dtype.

Every function here is ``f(old, new) -> value`` of contract.md section 2. Compiled code
names the reduction it runs, ``fold(op, old, new)`` with ``op`` a literal name in
:data:`OPS`, and numba picks the function while typing: see :mod:`scatterx_numba.kernels.scatter`
for why a name and not the function itself.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload

# Compiled functions that are only ever called from other compiled functions: no cache
# of their own is needed (they are compiled into the cached kernels).
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
    # equal values (0.0 and -0.0) the new one is kept. ``|``, not ``or``: no branch, a
    # select (random values mispredict a branch half the time: 5x the hand-written loop).
    keep = (old != old) | (old > new)
    return old if keep else new


@_inline
def minimum(old: Any, new: Any) -> Any:
    keep = (old != old) | (old < new)  # as in maximum
    return old if keep else new


# ---- float16 and bfloat16, stored as uint16 bits ------------------------------------
# The value is computed in float32 and rounded once: float32 carries more than twice the
# bits of either format plus two, so this equals NumPy's and ml_dtypes' round-every-step
# arithmetic bit for bit (no double-rounding error is possible).


def _through_float32(decode: Any, encode: Any, old_wins_ties: bool) -> tuple[Any, ...]:
    """add, mul, max and min of a 16-bit float format, on its uint16 bits.

    ``decode`` widens the bits to float32 exactly; ``encode`` rounds a float32 back.
    ``old_wins_ties``: of two equal values (0.0 and -0.0) the one already there stays,
    as in NumPy's float16 maximum and minimum (its float32/float64 loops and ml_dtypes'
    bfloat16 keep the new one).
    """

    @_inline
    def add16(old: Any, new: Any) -> Any:
        return encode(decode(old) + decode(new))

    @_inline
    def mul16(old: Any, new: Any) -> Any:
        return encode(decode(old) * decode(new))

    @_inline
    def max16(old: Any, new: Any) -> Any:
        a, b = decode(old), decode(new)
        return old if (a != a or a > b or (old_wins_ties and a == b)) else new

    @_inline
    def min16(old: Any, new: Any) -> Any:
        a, b = decode(old), decode(new)
        return old if (a != a or a < b or (old_wins_ties and a == b)) else new

    return add16, mul16, max16, min16


half_add, half_mul, half_max, half_min = _through_float32(_half_to_float, _float_to_half, True)
bf16_add, bf16_mul, bf16_max, bf16_min = _through_float32(_bf16_to_float, _float_to_bf16, False)

#: The reductions by name.
OPS: dict[str, Any] = {
    "take_new": take_new,
    "add": add,
    "mul": mul,
    "max": maximum,
    "min": minimum,
    **{
        f"{family}_{reduction}": function
        for family, functions in (
            ("half", (half_add, half_mul, half_max, half_min)),
            ("bf16", (bf16_add, bf16_mul, bf16_max, bf16_min)),
        )
        for reduction, function in zip(("add", "mul", "max", "min"), functions, strict=True)
    },
}


def op_name(family: str, reduction: str) -> str:
    """The name in :data:`OPS` of a reduction on a storage family.

    ``none`` moves bits, whatever the family. bool is stored as uint8 0/1, where logical
    or is max and logical and is min.
    """
    if reduction == "none":
        return "take_new"
    if family == "bool":
        return {"add": "max", "mul": "min"}.get(reduction, reduction)
    return reduction if family == "plain" else f"{family}_{reduction}"


def fold(op: str, old: Any, new: Any) -> Any:
    """``OPS[op](old, new)``, in compiled code only: ``op`` must be a literal name."""
    raise NotImplementedError


# Not inlined before typing (LLVM inlines it): inlined together with the function it
# inlines, it trips numba's checks of its own IR (NumbaIRAssumptionWarning on max/min).
@overload(fold, prefer_literal=True)
def _fold_typing(op: Any, old: Any, new: Any) -> Any:
    if not isinstance(op, types.StringLiteral):
        msg = f"fold needs the literal name of a reduction; got {op}"
        raise TypingError(msg)
    function = OPS[op.literal_value]

    def call(op: Any, old: Any, new: Any) -> Any:  # numba wants the typing's parameters
        return function(old, new)

    return call
