"""Conformance cases: the operator text's examples, ONNX's node tests, and every error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ._case_parts import Array, BaseCase, ErrorRow, shared_errors
from ._case_parts import f32 as _f32
from ._case_parts import i64 as _i64


@dataclass(frozen=True)
class Case(BaseCase):
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
        The result printed in the ONNX text, when there is one (keyword-only, as the
        fields below).
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
    keywords: ClassVar[tuple[str, ...]] = ("axis", "reduction")

    updates: Any
    axis: Any = 0
    reduction: Any = "none"

    @property
    def signature(self) -> str:
        """What a JIT backend compiles for the case: ``"<dtype key>-<reduction>"``."""
        return f"{self.dtype_key}-{self.reduction}"


def _examples() -> list[tuple[Array, Array, Array, int, Array]]:
    """The operator text's two examples (ONNX's first two node tests repeat them): data,
    indices, updates, axis and the printed result."""
    return [
        (
            np.zeros((3, 3), dtype=np.float32),
            _i64([[1, 0, 2], [0, 2, 1]]),
            _f32([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]]),
            0,
            _f32([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]]),
        ),
        (
            _f32([[1.0, 2.0, 3.0, 4.0, 5.0]]),
            _i64([[1, 3]]),
            _f32([[1.1, 2.1]]),
            1,
            _f32([[1.0, 1.1, 3.0, 2.1, 5.0]]),
        ),
    ]


def spec_cases() -> list[Case]:
    """The two examples of the ONNX ScatterElements operator text."""
    return [
        Case(f"spec-example-{n}", "spec", data, indices, updates, axis=axis, expected=expected)
        for n, (data, indices, updates, axis, expected) in enumerate(_examples(), 1)
    ]


def onnx_node_cases() -> list[Case]:
    """ONNX's seven backend node tests of ScatterElements (onnx/backend/test/case/node)."""
    cases = [
        Case(f"onnx-{name}", "onnx-node", data, indices, updates, axis=axis, expected=expected)
        for name, (data, indices, updates, axis, expected) in zip(
            ("without_axis", "with_axis"), _examples(), strict=True
        )
    ]
    row = _f32([[1.0, 2.0, 3.0, 4.0, 5.0]])
    cases.append(
        Case(
            "onnx-with_negative_indices",
            "onnx-node",
            row,
            _i64([[1, -3]]),
            _f32([[1.1, 2.1]]),
            axis=1,
            expected=_f32([[1.0, 1.1, 2.1, 4.0, 5.0]]),
        )
    )
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


def _case(row: ErrorRow) -> Case:
    """The scatter's case of the error ``row``."""
    arguments = (row.data, row.indices, row.updates, row.axis, row.reduction)
    return Case(f"error-{row.name}", "errors", *arguments, error=row.error, match=row.match)


def error_cases() -> list[Case]:
    """Every error of contract.md section 4 that NumPy arrays can provoke."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = _i64([[0, 1], [2, 0]])
    upd = _f32([[1, 2], [3, 4]])
    c64 = data.astype(np.complex64)
    text = np.array(["ab", "cd"], dtype="U2")
    words = np.array(["ab", "cd"], dtype=np.dtypes.StringDType())
    one = _i64([1])
    shared = shared_errors()
    rows = [
        ErrorRow(
            "reduction-name",
            ValueError,
            r"one of 'none'.*got 'sum'",
            data,
            idx,
            updates=upd,
            reduction="sum",
        ),
        ErrorRow(
            "reduction-none-object", ValueError, r"got None", data, idx, updates=upd, reduction=None
        ),
        *shared.call,
        ErrorRow(
            "updates-shape",
            ValueError,
            r"updates shape \(2, 1\).*indices shape \(2, 2\)",
            data,
            idx,
            updates=_f32([[1], [2]]),
        ),
        shared.too_wide,
        *shared.index_dtypes,
        ErrorRow(
            "updates-dtype",
            TypeError,
            r"updates float64 and data float32",
            data,
            idx,
            updates=upd.astype(np.float64),
        ),
        *(
            ErrorRow(
                f"complex-{reduction}",
                TypeError,
                rf"'{reduction}' is not defined for dtype complex64",
                c64,
                idx,
                updates=upd.astype(np.complex64),
                reduction=reduction,
            )
            for reduction in ("max", "min")
        ),
        ErrorRow(
            "fixed-string-add",
            TypeError,
            r"'add' is not defined.*StringDType",
            text,
            one,
            updates=text[:1],
            reduction="add",
        ),
        ErrorRow(
            "fixed-string-mul",
            TypeError,
            r"'mul' is not defined",
            text,
            one,
            updates=text[:1],
            reduction="mul",
        ),
        ErrorRow(
            "string-mul",
            TypeError,
            r"'mul' is not defined for dtype StringDType",
            words,
            one,
            updates=words[:1],
            reduction="mul",
        ),
        ErrorRow(
            "dtype-datetime",
            TypeError,
            r"datetime64.*does not define",
            np.zeros(3, "M8[s]"),
            one,
            updates=np.zeros(1, "M8[s]"),
        ),
        *shared.bounds,
        shared.int32_1d,
    ]
    return [_case(row) for row in rows]
