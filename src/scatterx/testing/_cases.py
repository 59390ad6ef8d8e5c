"""Conformance cases: the operator text's examples, ONNX's node tests, and every error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

Array = np.ndarray[Any, Any]


def dtype_key_of(data: Any) -> str | None:
    """The contract's name of ``data``'s dtype, when it has one (None for a list, say)."""
    from scatterx import dtype_key

    dtype = getattr(data, "dtype", None)
    return None if dtype is None else dtype_key(dtype)


@dataclass(frozen=True)
class Case:
    """One call of ``scatter_elements`` and what it must do.

    A case either succeeds, and then every backend must equal
    :func:`~scatterx.testing.reference_scatter_elements` bit for bit (``expected``, when
    given, is the value printed in the ONNX text, compared to the oracle with a tolerance),
    or it raises ``error`` with a message matching the regular expression ``match``.

    Attributes
    ----------
    name, family : str
        The case's unique name, and the family of cases it belongs to.
    data, indices, updates, axis, reduction
        The arguments of the call.
    expected : numpy.ndarray or None
        The result printed in the ONNX text, when there is one.
    error : type or None
        The exception the call must raise, if any.
    match : str or None
        A regular expression the exception's message must match.
    tags : frozenset of str
        Free labels of the case.
    numpy_roles : frozenset of str
        The arrays (``"data"``, ``"indices"``, ``"updates"``) that stay NumPy arrays
        whatever the arrays of the run: a call that mixes array libraries.
    """

    operation: ClassVar[str] = "scatter_elements"
    roles: ClassVar[tuple[str, ...]] = ("data", "indices", "updates")

    name: str
    family: str
    data: Any
    indices: Any
    updates: Any
    axis: Any = 0
    reduction: Any = "none"
    expected: Any = None
    error: type[Exception] | None = None
    match: str | None = None
    tags: frozenset[str] = field(default_factory=frozenset)
    numpy_roles: frozenset[str] = field(default_factory=frozenset)

    @property
    def dtype_key(self) -> str | None:
        """The contract's name of ``data``'s dtype, when it has one."""
        return dtype_key_of(self.data)

    @property
    def arrays(self) -> tuple[Any, ...]:
        """The arrays of the call, in the order of ``roles``."""
        return self.data, self.indices, self.updates

    @property
    def signature(self) -> str:
        """What a JIT backend compiles for the case: ``"<dtype key>-<reduction>"``."""
        return f"{self.dtype_key}-{self.reduction}"

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the call.

        Returns
        -------
        dict
            ``axis`` and ``reduction``.
        """
        return {"axis": self.axis, "reduction": self.reduction}


def _f32(values: Any) -> Array:
    return np.array(values, dtype=np.float32)


def _i64(values: Any) -> Array:
    return np.array(values, dtype=np.int64)


def spec_cases() -> list[Case]:
    """The two examples of the ONNX ScatterElements operator text."""
    return [
        Case(
            "spec-example-1",
            "spec",
            np.zeros((3, 3), dtype=np.float32),
            _i64([[1, 0, 2], [0, 2, 1]]),
            _f32([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]]),
            axis=0,
            expected=_f32([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]]),
        ),
        Case(
            "spec-example-2",
            "spec",
            _f32([[1.0, 2.0, 3.0, 4.0, 5.0]]),
            _i64([[1, 3]]),
            _f32([[1.1, 2.1]]),
            axis=1,
            expected=_f32([[1.0, 1.1, 3.0, 2.1, 5.0]]),
        ),
    ]


def onnx_node_cases() -> list[Case]:
    """ONNX's seven backend node tests of ScatterElements (onnx/backend/test/case/node)."""
    row = _f32([[1.0, 2.0, 3.0, 4.0, 5.0]])
    cases = [
        Case(
            "onnx-without_axis",
            "onnx-node",
            np.zeros((3, 3), dtype=np.float32),
            _i64([[1, 0, 2], [0, 2, 1]]),
            _f32([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]]),
            expected=_f32([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]]),
        ),
        Case(
            "onnx-with_axis",
            "onnx-node",
            row,
            _i64([[1, 3]]),
            _f32([[1.1, 2.1]]),
            axis=1,
            expected=_f32([[1.0, 1.1, 3.0, 2.1, 5.0]]),
        ),
        Case(
            "onnx-with_negative_indices",
            "onnx-node",
            row,
            _i64([[1, -3]]),
            _f32([[1.1, 2.1]]),
            axis=1,
            expected=_f32([[1.0, 1.1, 2.1, 4.0, 5.0]]),
        ),
    ]
    reduced = {
        "with_duplicate_indices": ("add", [[1.0, 5.2, 3.0, 4.0, 5.0]]),
        "with_reduction_max": ("max", [[1.0, 2.1, 3.0, 4.0, 5.0]]),
        "with_reduction_min": ("min", [[1.0, 1.1, 3.0, 4.0, 5.0]]),
        "with_reduction_mul": ("mul", [[1.0, 4.62, 3.0, 4.0, 5.0]]),
    }
    for name, (reduction, expected) in reduced.items():
        cases.append(
            Case(
                f"onnx-{name}",
                "onnx-node",
                row,
                _i64([[1, 1]]),
                _f32([[1.1, 2.1]]),
                axis=1,
                reduction=reduction,
                expected=_f32(expected),
            )
        )
    return cases


def _error(
    name: str,
    error: type[Exception],
    match: str,
    data: Any,
    indices: Any,
    updates: Any,
    axis: Any = 0,
    reduction: Any = "none",
) -> Case:
    return Case(
        f"error-{name}", "errors", data, indices, updates, axis, reduction, error=error, match=match
    )


def error_cases() -> list[Case]:
    """Every error of contract.md section 4 that NumPy arrays can provoke."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = _i64([[0, 1], [2, 0]])
    upd = _f32([[1, 2], [3, 4]])
    c64 = data.astype(np.complex64)
    text = np.array(["ab", "cd"], dtype="U2")
    words = np.array(["ab", "cd"], dtype=np.dtypes.StringDType())
    one = _i64([1])
    return [
        _error(
            "reduction-name",
            ValueError,
            r"one of 'none'.*got 'sum'",
            data,
            idx,
            upd,
            reduction="sum",
        ),
        _error("reduction-none-object", ValueError, r"got None", data, idx, upd, reduction=None),
        _error(
            "axis-float", TypeError, r"axis must be an int, got float", data, idx, upd, axis=1.0
        ),
        _error("axis-bool", TypeError, r"axis must be an int, got bool", data, idx, upd, axis=True),
        _error("axis-too-large", ValueError, r"\[-2, 1\].*axis=2", data, idx, upd, axis=2),
        _error("axis-too-small", ValueError, r"\[-2, 1\].*axis=-3", data, idx, upd, axis=-3),
        _error(
            "scalar-data",
            ValueError,
            r"scalars have no axis",
            np.float32(1.0),
            np.int64(0),
            np.float32(2.0),
        ),
        _error(
            "rank-mismatch",
            ValueError,
            r"indices shape \(2,\).*data shape \(3, 4\)",
            data,
            _i64([0, 1]),
            _f32([1, 2]),
        ),
        _error(
            "updates-shape",
            ValueError,
            r"updates shape \(2, 1\).*indices shape \(2, 2\)",
            data,
            idx,
            _f32([[1], [2]]),
        ),
        _error(
            "indices-too-wide",
            ValueError,
            r"dimension 1.*indices has 5, data has 4",
            data,
            np.zeros((1, 5), np.int64),
            np.zeros((1, 5), np.float32),
        ),
        _error(
            "indices-float",
            TypeError,
            r"float64.*indices\.astype\(np\.int64\)",
            data,
            idx.astype(np.float64),
            upd,
        ),
        _error(
            "indices-int16",
            TypeError,
            r"int16.*indices\.astype\(np\.int64\)",
            data,
            idx.astype(np.int16),
            upd,
        ),
        _error(
            "indices-uint32",
            TypeError,
            r"uint32.*indices\.astype\(np\.int64\)",
            data,
            idx.astype(np.uint32),
            upd,
        ),
        _error(
            "updates-dtype",
            TypeError,
            r"updates float64 and data float32",
            data,
            idx,
            upd.astype(np.float64),
        ),
        _error(
            "complex-max",
            TypeError,
            r"'max' is not defined for dtype complex64",
            c64,
            idx,
            upd.astype(np.complex64),
            reduction="max",
        ),
        _error(
            "complex-min",
            TypeError,
            r"'min' is not defined for dtype complex64",
            c64,
            idx,
            upd.astype(np.complex64),
            reduction="min",
        ),
        _error(
            "fixed-string-add",
            TypeError,
            r"'add' is not defined.*StringDType",
            text,
            one,
            text[:1],
            reduction="add",
        ),
        _error(
            "fixed-string-mul",
            TypeError,
            r"'mul' is not defined",
            text,
            one,
            text[:1],
            reduction="mul",
        ),
        _error(
            "string-mul",
            TypeError,
            r"'mul' is not defined for dtype StringDType",
            words,
            one,
            words[:1],
            reduction="mul",
        ),
        _error(
            "dtype-datetime",
            TypeError,
            r"datetime64.*does not define",
            np.zeros(3, "M8[s]"),
            one,
            np.zeros(1, "M8[s]"),
        ),
        _error(
            "index-too-large",
            IndexError,
            r"index 5 at position \(0, 1\).*axis 0 with size 3.*\[-3, 2\]",
            data,
            _i64([[0, 5], [-9, 1]]),
            upd,
        ),
        _error(
            "index-too-negative",
            IndexError,
            r"index -5 at position \(1, 0\).*axis 1 with size 4.*\[-4, 3\]",
            data,
            _i64([[0, 3], [-5, 1]]),
            upd,
            axis=1,
        ),
        _error(
            "index-int32-1d",
            IndexError,
            r"index 3 at position \(2,\)",
            _f32([1, 2, 3]),
            np.array([0, -3, 3, 7], np.int32),
            _f32([1, 2, 3, 4]),
        ),
    ]
