"""A traced call's primitive: the FFI target on the CPU, writing into a donated ``data``.

``jax.ffi.ffi_call`` fixes its ``input_output_aliases`` when the call is traced, but
whether ``data`` is donated (``jax.jit(f, donate_argnums=...)``) is known only when the
traced function is lowered: the same jaxpr serves both. Aliasing ``data`` to the result
without donation makes XLA copy ``data`` into a new buffer before the call, on one thread
and page by page (docs/performance.md); with donation that copy is gone, and the kernel
updates ``data`` in place.

So a traced call is the primitive ``scatterx_call``, lowered per platform: on the CPU
the FFI call, whose ``data`` (a scatter's) is aliased to its result where the IR value
given for it is an argument of the module's main function that JAX marks donated
(``tf.aliasing_output``: aliased to a result; ``jax.buffer_donor``: donated otherwise);
elsewhere the host callback. The lowering stands where the call is (``cacheable=False``:
a cached lowering is a function of its own, whose arguments are never main's), and
nothing between it and the arguments may be lowered as a function of its own: the
``custom_vjp`` around it is lowered in place, and the platforms are this primitive's
own rules, not a ``cond``. The handler (:mod:`scatterx._jax.ffi`) then sees one buffer
for ``data`` and the result, and runs the scatter in place. Under ``jax.vmap`` the
primitive is batched as ``ffi_call``'s ``broadcast_all`` is; outside ``jax.jit`` (an
eager ``jax.vmap``) it runs as a jitted call of its own.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

#: The attributes JAX gives an argument of the main function whose buffer is donated.
DONATED_MARKS = ("tf.aliasing_output", "jax.buffer_donor")


class Call(NamedTuple):
    """What a traced call's lowering needs (the primitive's one parameter, by identity)."""

    target: str  # the FFI target's name
    key: int  # the entry of the traced call, for the target
    scatter: bool  # whether ``data`` may be aliased to the result (a scatter's)
    callback: Callable[..., Any]  # the host callback's function, off the CPU


_PRIMITIVE: Any = None
_LOCK = threading.Lock()


def bind(call: Call, result: Any, *arrays: Any) -> Any:
    """The traced call of ``arrays``: ``result`` a shape and dtype (vmap's batch not
    included)."""
    shape = tuple(int(n) for n in result.shape)
    return primitive().bind(*arrays, call=call, shape=shape, dtype=np.dtype(result.dtype))


def primitive() -> Any:
    """The primitive, made and registered with JAX once per process (on first use)."""
    global _PRIMITIVE
    with _LOCK:
        if _PRIMITIVE is None:
            _PRIMITIVE = _make()
        return _PRIMITIVE


def _make() -> Any:
    from jax.extend.core import Primitive
    from jax.interpreters import batching, mlir

    made: Any = Primitive("scatterx_call")
    made.def_abstract_eval(_abstract)
    made.def_impl(_impl)
    batching.primitive_batchers[made] = _batched
    try:
        mlir.register_lowering(made, _callback_lowering, cacheable=False)
    except TypeError:  # a JAX that caches no lowering: every one stands in place
        mlir.register_lowering(made, _callback_lowering)
    mlir.register_lowering(made, _cpu_lowering, platform="cpu")
    return made


def _abstract(*avals: Any, call: Call, shape: Any, dtype: Any) -> Any:
    import jax

    return jax.core.ShapedArray(shape, dtype)


def _impl(*arrays: Any, call: Call, shape: Any, dtype: Any) -> Any:
    """Outside ``jax.jit``: a jitted call of its own (an eager array is never donated)."""
    return _eager(call, shape, dtype)(*arrays)


@functools.lru_cache(maxsize=64)
def _eager(call: Call, shape: Any, dtype: Any) -> Any:
    import jax

    return jax.jit(functools.partial(primitive().bind, call=call, shape=shape, dtype=dtype))


def _batched(arrays: Any, dims: Any, *, call: Call, shape: Any, dtype: Any) -> tuple[Any, int]:
    """``ffi_call``'s ``broadcast_all``: every array with the batch in front."""
    from jax import lax

    size = next(a.shape[d] for a, d in zip(arrays, dims, strict=True) if d is not None)
    moved = [
        lax.broadcast(a, (size,)) if d is None else _to_front(a, d)
        for a, d in zip(arrays, dims, strict=True)
    ]
    return primitive().bind(*moved, call=call, shape=(size, *shape), dtype=dtype), 0


def _to_front(array: Any, dim: int) -> Any:
    import jax.numpy as jnp

    return array if dim == 0 else jnp.moveaxis(array, dim, 0)


def _cpu_lowering(ctx: Any, *operands: Any, call: Call, shape: Any, dtype: Any) -> Any:
    """The FFI call, a scatter's ``data`` aliased to the result where it is donated."""
    import jax
    from jax.interpreters import mlir

    result = jax.ShapeDtypeStruct(shape, dtype)  # type: ignore[no-untyped-call]
    aliases = {0: 0} if call.scatter and donated(operands[0]) else None
    ffi: Any = jax.ffi.ffi_call(call.target, result, input_output_aliases=aliases)
    key = np.int64(call.key)
    rule = mlir.lower_fun(lambda *arrays: ffi(*arrays, key=key), multiple_results=False)
    return rule(ctx, *operands)


def _callback_lowering(ctx: Any, *operands: Any, call: Call, shape: Any, dtype: Any) -> Any:
    """The host callback, on every platform but the CPU."""
    import jax
    from jax.interpreters import mlir

    result = jax.ShapeDtypeStruct(shape, dtype)  # type: ignore[no-untyped-call]

    def callback(*arrays: Any) -> Any:
        return jax.pure_callback(call.callback, result, *arrays)

    return mlir.lower_fun(callback, multiple_results=False)(ctx, *operands)


def donated(value: Any) -> bool:
    """Whether the IR ``value`` is an argument of the function being lowered that JAX marks
    donated (only the main function's arguments are marked; a value computed, or an
    argument of a function of its own, such as a nested ``jax.jit``'s, is not)."""
    from jax.interpreters.mlir import ir

    try:
        argument: Any = ir.BlockArgument(value)
    except (TypeError, ValueError):  # not a block's argument: a value computed
        return False
    function = argument.owner.owner
    if function is None or "arg_attrs" not in function.attributes:
        return False
    marks = ir.ArrayAttr(function.attributes["arg_attrs"])
    if argument.arg_number >= len(marks):
        return False
    found = ir.DictAttr(marks[argument.arg_number])
    return any(mark in found for mark in DONATED_MARKS)
