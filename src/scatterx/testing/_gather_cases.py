"""Conformance cases of gather_elements: ONNX's node tests and every error that applies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ._case_parts import BaseCase, ErrorRow, shared_errors
from ._case_parts import f32 as _f32
from ._case_parts import i64 as _i64


@dataclass(frozen=True)
class GatherCase(BaseCase):
    """One call of ``gather_elements`` and what it must do.

    As :class:`~scatterx.testing.Case`: a case either succeeds, and then every backend
    must equal :func:`~scatterx.testing.reference_gather_elements` bit for bit, or it
    raises ``error`` with a message matching the regular expression ``match``.

    Attributes
    ----------
    name, family : str
        The case's unique name (all begin with ``gather-``), and its family of cases.
    data, indices, axis
        The arguments of the call.
    expected, error, match, tags, numpy_roles
        As on :class:`~scatterx.testing.Case` (``expected`` is the result printed in
        ONNX's node test; ``numpy_roles`` names ``"data"`` or ``"indices"``).
    """

    operation: ClassVar[str] = "gather_elements"
    roles: ClassVar[tuple[str, ...]] = ("data", "indices")
    keywords: ClassVar[tuple[str, ...]] = ("axis",)

    axis: Any = 0

    @property
    def signature(self) -> str:
        """What a JIT backend compiles for the case: ``"<dtype key>-gather"``."""
        return f"{self.dtype_key}-gather"


def gather_onnx_node_cases() -> list[GatherCase]:
    """ONNX's three backend node tests of GatherElements (onnx/backend/test/case/node);
    the first two are the operator text's examples."""
    square = _f32([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    return [
        GatherCase(
            "gather-onnx-0",
            "gather-onnx-node",
            _f32([[1, 2], [3, 4]]),
            _i64([[0, 0], [1, 0]]),
            axis=1,
            expected=_f32([[1, 1], [4, 3]]),
        ),
        GatherCase(
            "gather-onnx-1",
            "gather-onnx-node",
            square,
            _i64([[1, 2, 0], [2, 0, 0]]),
            axis=0,
            expected=_f32([[4, 8, 3], [7, 2, 3]]),
        ),
        GatherCase(
            "gather-onnx-negative_indices",
            "gather-onnx-node",
            square,
            _i64([[-1, -2, 0], [-2, 0, 0]]),
            axis=0,
            expected=_f32([[7, 5, 3], [4, 2, 3]]),
        ),
    ]


def _case(row: ErrorRow) -> GatherCase:
    """The gather's case of the error ``row`` (a scatter's ``updates`` left out)."""
    return GatherCase(
        f"gather-error-{row.name}",
        "gather-errors",
        row.data,
        row.indices,
        row.axis,
        error=row.error,
        match=row.match,
        numpy_roles=row.numpy_roles,
    )


def _metadata_errors() -> list[ErrorRow]:
    """The errors of axis, rank, shape and dtype, raised before any index is read."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = _i64([[0, 1], [2, 0]])
    # NumPy-like arrays are told astype, torch tensors .to (each library's own spelling).
    fix = r"indices\.(astype\(np\.int64\)|to\(torch\.int64\))"
    shared = shared_errors()
    return [
        *shared.call,
        shared.too_wide,
        ErrorRow(
            "indices-too-tall",
            ValueError,
            r"dimension 0.*indices has 4, data has 3",
            data,
            np.zeros((4, 2), np.int64),
            axis=1,
        ),
        *shared.index_dtypes,
        ErrorRow("indices-bool", TypeError, rf"bool.*{fix}", data, idx.astype(bool)),
        ErrorRow(
            "dtype-datetime",
            TypeError,
            r"datetime64.*does not define",
            np.zeros(3, "M8[s]"),
            idx[0],
        ),
    ]


def _bounds_errors() -> list[ErrorRow]:
    """Out-of-bounds indices: the first bad one in C order is named, with its position."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    two_bad = _i64([[0, 5], [-9, 1]])
    # Bad values in two blocks of three: the first in C order (row 0) lies in a later
    # block of row-major block order than the second (row 1, column 0).
    across_blocks = np.zeros((6, 6), np.int64)
    across_blocks[0, 5], across_blocks[1, 0] = 7, 9
    shared = shared_errors()
    return [
        *shared.bounds,
        ErrorRow(
            # In memory (Fortran order) -9 comes first; in C order 5 does.
            "index-c-order-not-memory-order",
            IndexError,
            r"index 5 at position \(0, 1\)",
            data,
            np.asfortranarray(two_bad),
        ),
        ErrorRow(
            "index-c-order-across-blocks",
            IndexError,
            r"index 7 at position \(0, 5\).*axis 0 with size 4",
            np.zeros((4, 6), np.float32),
            across_blocks,
        ),
        shared.int32_1d,
        ErrorRow(
            "index-empty-axis",
            IndexError,
            r"index 0 at position \(0, 0\).*axis 1 with size 0: no index is valid",
            np.zeros((3, 0), np.float32),
            np.zeros((2, 1), np.int64),
            axis=1,
        ),
    ]


def _value_errors() -> list[ErrorRow]:
    """Arrays of two libraries; object arrays of str only; a StringDType without NA."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = _i64([[0, 1], [2, 0]])
    mixed = r"data and indices must come from one array library; got data: "
    with_na = np.array(["ab", None], dtype=np.dtypes.StringDType(na_object=None))
    one = _i64([1])
    return [
        ErrorRow(
            "mixed-numpy-indices", TypeError, mixed, data, idx, numpy_roles=frozenset({"indices"})
        ),
        ErrorRow("mixed-numpy-data", TypeError, mixed, data, idx, numpy_roles=frozenset({"data"})),
        ErrorRow(
            "object-none",
            TypeError,
            r"data.*str only.*None",
            np.array(["ab", None], dtype=object),
            one,
        ),
        ErrorRow(
            "object-int", TypeError, r"data.*got 3 \(int\)", np.array(["ab", 3], dtype=object), one
        ),
        ErrorRow(
            "stringdtype-na", TypeError, r"data holds the missing value None.*\(1,\)", with_na, one
        ),
    ]


def gather_error_cases() -> list[GatherCase]:
    """Every error of contract.md section 4 that applies to a gather (section 10)."""
    return [_case(row) for row in (*_metadata_errors(), *_bounds_errors(), *_value_errors())]
