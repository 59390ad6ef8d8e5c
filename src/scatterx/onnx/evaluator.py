"""The OpRun classes of :mod:`scatterx.onnx`: thin shells over the public functions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np
from onnx.reference.op_run import OpRun

from .._api import gather_elements, gather_nd, scatter_elements, scatter_nd
from .._dtypes import REDUCTIONS, dtype_key
from .._errors import BackendError

#: The reductions each opset of ScatterElements and ScatterND allows (none of them before opset 16).
_REDUCTIONS_FROM = ((18, ("none", "add", "mul", "max", "min")), (16, ("none", "add", "mul")))

#: The errors of the contract that leave ``run`` named after the node.
_CONTRACT_ERRORS = (ValueError, TypeError, IndexError, BackendError)

#: Set on the errors this module raises, so that OpRun.run's rewrapping of a TypeError
#: (into one that loses the message) can be undone.
_NODE_ERROR = "_scatterx_onnx_node"


def _as_bits(dtype: np.dtype[Any]) -> np.dtype[Any] | None:
    """The unsigned integer dtype holding the bits of an element type scatterx has no
    arithmetic for (float8, int4, float4 of ml_dtypes; onnx's own custom types), else None.

    bfloat16 is not one of them: it is ml_dtypes', and scatterx computes in it.
    """
    if dtype.fields is not None and len(dtype.fields) == 1:
        # onnx < 1.19 hands bfloat16, float8 ... as one-field structured dtypes
        # (onnx.reference.custom_element_types); the field's name is the type's.
        name = next(iter(dtype.fields))
        if name == "bfloat16":
            return None
        return np.dtype(f"u{dtype.itemsize}")
    if dtype_key(dtype) is None and dtype.type.__module__ == "ml_dtypes":
        return np.dtype(f"u{dtype.itemsize}")
    return None


def _type_name(dtype: np.dtype[Any]) -> str:
    return next(iter(dtype.fields)) if dtype.fields else dtype.name


def _bfloat16_view(array: Any) -> Any:
    """onnx < 1.19's bfloat16 (a one-field structured dtype) as ml_dtypes' bfloat16."""
    dtype = getattr(array, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.fields and tuple(dtype.fields) == ("bfloat16",):
        import ml_dtypes

        return np.asarray(array).view(ml_dtypes.bfloat16)
    return array


class _Node(OpRun):
    """What the operators share: the opset rules, the element types, the errors."""

    #: The first opset with the operator, and the attributes it may carry.
    since: ClassVar[int]
    attributes: ClassVar[frozenset[str]] = frozenset({"axis"})

    @property
    def _who(self) -> str:
        name = self.onnx_node.name
        return f"{self.onnx_node.op_type} node {name!r}" if name else self.onnx_node.op_type

    @property
    def _opset(self) -> int:
        opsets: dict[str, int] = self.run_params["opsets"]
        domain = self.onnx_node.domain
        return int(opsets.get(domain, opsets.get("ai.onnx" if domain == "" else "", 0)))

    def _check_attributes(self) -> None:
        """ValueError for an attribute the node's opset does not define."""
        opset = self._opset
        if opset and opset < self.since:
            msg = f"{self.onnx_node.op_type} exists from opset {self.since}; got {opset}"
            raise ValueError(msg)
        for attribute in self.onnx_node.attribute:
            if attribute.name not in self.attributes:
                known = ", ".join(sorted(self.attributes))
                msg = f"opset {opset} defines the attributes {known}; got {attribute.name!r}"
                raise ValueError(msg)

    @contextmanager
    def _named_errors(self) -> Iterator[None]:
        """The contract's errors, raised again with the node's name in the message."""
        try:
            yield
        except _CONTRACT_ERRORS as exc:
            raise _named(exc, self._who) from exc

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """OpRun's run, with the node's attributes checked against its opset first and the
        contract's errors raised as they are (OpRun's run rewraps a TypeError)."""
        with self._named_errors():
            self._check_attributes()
        run: Callable[..., Any] = super().run
        try:
            return run(*args, **kwargs)
        except TypeError as exc:
            cause = exc.__cause__
            if cause is not None and getattr(cause, _NODE_ERROR, False):
                raise cause from cause.__cause__
            raise

    def _call(
        self, function: Callable[..., Any], *arrays: Any, moves_bits: bool, **kw: Any
    ) -> tuple[Any]:
        """``function(*arrays, **kw)``; element types scatterx has no arithmetic for are
        served by their bits where the call only moves them, else refused."""
        given = [_bfloat16_view(a) for a in arrays]
        dtype = getattr(given[0], "dtype", None)
        bits = _as_bits(dtype) if isinstance(dtype, np.dtype) else None
        values = (0, 2) if len(given) == 3 else (0,)  # data and updates: the same dtype
        with self._named_errors():
            if bits is None or any(getattr(given[k], "dtype", None) != dtype for k in values):
                return (function(*given, **kw),)
            if not moves_bits:
                name = _type_name(np.dtype(dtype))
                msg = (
                    f"{name} tensors are served by their bits, for reduction 'none' only: "
                    f"scatterx has no {name} arithmetic for reduction {kw.get('reduction')!r}"
                )
                raise TypeError(msg)
            for k in values:
                given[k] = np.asarray(given[k]).view(bits)
            return (np.asarray(function(*given, **kw)).view(dtype),)


def _named(exc: Exception, who: str) -> Exception:
    """An exception of ``exc``'s type whose message opens with the node's name."""
    try:
        named = type(exc)(f"{who}: {exc}")
    except Exception:  # an exception type that takes other arguments: add a note instead
        named = exc
        named.add_note(f"raised by {who}")
    setattr(named, _NODE_ERROR, True)
    return named


class _Reduces(_Node):
    """A scatter whose ``reduction`` attribute ONNX added at opset 16 (max, min at 18)."""

    def _check_attributes(self) -> None:
        super()._check_attributes()
        given = {a.name for a in self.onnx_node.attribute}
        opset = self._opset or _REDUCTIONS_FROM[0][0]
        allowed = next((names for first, names in _REDUCTIONS_FROM if opset >= first), ())
        reduction = getattr(self, "reduction", "none")
        if "reduction" in given and not allowed:
            msg = f"opset {opset} has no attribute reduction (opset 16 on has)"
            raise ValueError(msg)
        # A name no opset knows is the contract's ValueError, from the function called.
        if "reduction" in given and reduction in REDUCTIONS and reduction not in allowed:
            msg = (
                f"reduction {reduction!r} needs opset 18; opset {opset} allows {', '.join(allowed)}"
            )
            raise ValueError(msg)


class ScatterElements(_Reduces):
    """ONNX ScatterElements (opsets 11, 13, 16, 18) on :func:`scatterx.scatter_elements`."""

    since = 11
    attributes = frozenset({"axis", "reduction"})

    def _run(
        self, data: Any, indices: Any, updates: Any, axis: Any = 0, reduction: Any = "none"
    ) -> tuple[Any]:
        return self._call(
            scatter_elements,
            data,
            indices,
            updates,
            moves_bits=reduction == "none",
            axis=axis,
            reduction=reduction,
        )


class GatherElements(_Node):
    """ONNX GatherElements (opsets 11, 13) on :func:`scatterx.gather_elements`."""

    since = 11

    def _run(self, data: Any, indices: Any, axis: Any = 0) -> tuple[Any]:
        return self._call(gather_elements, data, indices, moves_bits=True, axis=axis)


class Scatter(_Node):
    """ONNX's deprecated Scatter (opsets 9, 10): ScatterElements without a reduction.

    ONNX removed it at opset 11 (ScatterElements took its place) and onnxruntime refuses it
    there: a model of a later opset gets the evaluator's own error, as without scatterx.
    """

    since = 9
    until = 10

    def __init__(self, onnx_node: Any, run_params: dict[str, Any], schema: Any = None) -> None:
        super().__init__(onnx_node, run_params, schema)
        if self._opset > self.until:
            self._refuse_removed()

    def _refuse_removed(self) -> None:
        """The evaluator's error for an operator its opset lacks (raised by its own loader),
        with a note naming ScatterElements."""
        from onnx.reference.ops import load_op

        domain, opset = self.onnx_node.domain, self._opset
        try:
            load_op(domain, "Scatter", opset)
        except Exception as exc:
            exc.add_note(
                f"ONNX's Scatter exists in opsets 9 and 10 only; at opset {opset} use "
                "ScatterElements (scatterx.onnx.ops serves it)"
            )
            raise
        msg = f"Scatter exists in opsets {self.since} and {self.until} only; got opset {opset}"
        raise NotImplementedError(msg)

    def _run(self, data: Any, indices: Any, updates: Any, axis: Any = 0) -> tuple[Any]:
        return self._call(scatter_elements, data, indices, updates, moves_bits=True, axis=axis)


class ScatterND(_Reduces):
    """ONNX ScatterND (opsets 11, 13, 16, 18) on :func:`scatterx.scatter_nd`: rows that
    pick the same slice apply in their order, the last winning under reduction none."""

    since = 11
    attributes = frozenset({"reduction"})

    def _run(self, data: Any, indices: Any, updates: Any, reduction: Any = "none") -> tuple[Any]:
        return self._call(
            scatter_nd, data, indices, updates, moves_bits=reduction == "none", reduction=reduction
        )


class GatherND(_Node):
    """ONNX GatherND (opsets 11, 12, 13) on :func:`scatterx.gather_nd`; ``batch_dims``
    from opset 12."""

    since = 11
    attributes = frozenset({"batch_dims"})

    def _check_attributes(self) -> None:
        super()._check_attributes()
        opset = self._opset
        if opset and opset < 12 and any(a.name == "batch_dims" for a in self.onnx_node.attribute):
            msg = f"opset {opset} has no attribute batch_dims (opset 12 on has)"
            raise ValueError(msg)

    def _run(self, data: Any, indices: Any, batch_dims: Any = 0) -> tuple[Any]:
        return self._call(gather_nd, data, indices, moves_bits=True, batch_dims=batch_dims)


ops: tuple[type[OpRun], ...] = (
    ScatterElements,
    GatherElements,
    Scatter,
    ScatterND,
    GatherND,
)
"""The operators, for ``ReferenceEvaluator(model, new_ops=scatterx.onnx.ops)``."""
