"""Conformance cases of gather_elements: ONNX's node tests and every error that applies."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ._cases import Case, dtype_key_of

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class GatherCase:
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
    expected : numpy.ndarray or None
        The result printed in ONNX's node test, when there is one.
    error : type or None
        The exception the call must raise, if any.
    match : str or None
        A regular expression the exception's message must match.
    tags : frozenset of str
        Free labels of the case.
    numpy_roles : frozenset of str
        The arrays (``"data"``, ``"indices"``) that stay NumPy arrays whatever the arrays
        of the run: a call that mixes array libraries.
    """

    operation: ClassVar[str] = "gather_elements"
    roles: ClassVar[tuple[str, ...]] = ("data", "indices")

    name: str
    family: str
    data: Any
    indices: Any
    axis: Any = 0
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
        return self.data, self.indices

    @property
    def signature(self) -> str:
        """What a JIT backend compiles for the case: ``"<dtype key>-gather"``."""
        return f"{self.dtype_key}-gather"

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the call.

        Returns
        -------
        dict
            ``axis``.
        """
        return {"axis": self.axis}


#: A case of either operation: what the runner, the pytest matrix and ``check`` take.
ConformanceCase = Case | GatherCase


def _f32(values: Any) -> Array:
    return np.array(values, dtype=np.float32)


def _i64(values: Any) -> Array:
    return np.array(values, dtype=np.int64)


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


def _error(
    name: str,
    error: type[Exception],
    match: str,
    data: Any,
    indices: Any,
    axis: Any = 0,
    numpy_roles: frozenset[str] = frozenset(),
) -> GatherCase:
    return GatherCase(
        f"gather-error-{name}",
        "gather-errors",
        data,
        indices,
        axis,
        error=error,
        match=match,
        numpy_roles=numpy_roles,
    )


def _metadata_errors() -> list[GatherCase]:
    """The errors of axis, rank, shape and dtype, raised before any index is read."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = _i64([[0, 1], [2, 0]])
    fix = r"indices\.astype\(np\.int64\)"
    return [
        _error("axis-float", TypeError, r"axis must be an int, got float", data, idx, axis=1.0),
        _error("axis-bool", TypeError, r"axis must be an int, got bool", data, idx, axis=True),
        _error("axis-too-large", ValueError, r"\[-2, 1\].*axis=2", data, idx, axis=2),
        _error("axis-too-small", ValueError, r"\[-2, 1\].*axis=-3", data, idx, axis=-3),
        _error("scalar-data", ValueError, r"scalars have no axis", np.float32(1), np.int64(0)),
        _error(
            "rank-mismatch",
            ValueError,
            r"indices shape \(2,\).*data shape \(3, 4\)",
            data,
            _i64([0, 1]),
        ),
        _error(
            "indices-too-wide",
            ValueError,
            r"dimension 1.*indices has 5, data has 4",
            data,
            np.zeros((1, 5), np.int64),
        ),
        _error(
            "indices-too-tall",
            ValueError,
            r"dimension 0.*indices has 4, data has 3",
            data,
            np.zeros((4, 2), np.int64),
            axis=1,
        ),
        _error("indices-float", TypeError, rf"float64.*{fix}", data, idx.astype(np.float64)),
        _error("indices-int16", TypeError, rf"int16.*{fix}", data, idx.astype(np.int16)),
        _error("indices-uint32", TypeError, rf"uint32.*{fix}", data, idx.astype(np.uint32)),
        _error("indices-bool", TypeError, rf"bool.*{fix}", data, idx.astype(bool)),
        _error(
            "dtype-datetime",
            TypeError,
            r"datetime64.*does not define",
            np.zeros(3, "M8[s]"),
            idx[0],
        ),
    ]


def _bounds_errors() -> list[GatherCase]:
    """Out-of-bounds indices: the first bad one in C order is named, with its position."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    two_bad = _i64([[0, 5], [-9, 1]])
    # Bad values in two blocks of three: the first in C order (row 0) lies in a later
    # block of row-major block order than the second (row 1, column 0).
    across_blocks = np.zeros((6, 6), np.int64)
    across_blocks[0, 5], across_blocks[1, 0] = 7, 9
    return [
        _error(
            "index-too-large",
            IndexError,
            r"index 5 at position \(0, 1\).*axis 0 with size 3.*\[-3, 2\]",
            data,
            two_bad,
        ),
        _error(
            "index-too-negative",
            IndexError,
            r"index -5 at position \(1, 0\).*axis 1 with size 4.*\[-4, 3\]",
            data,
            _i64([[0, 3], [-5, 1]]),
            axis=1,
        ),
        _error(
            # In memory (Fortran order) -9 comes first; in C order 5 does.
            "index-c-order-not-memory-order",
            IndexError,
            r"index 5 at position \(0, 1\)",
            data,
            np.asfortranarray(two_bad),
        ),
        _error(
            "index-c-order-across-blocks",
            IndexError,
            r"index 7 at position \(0, 5\).*axis 0 with size 4",
            np.zeros((4, 6), np.float32),
            across_blocks,
        ),
        _error(
            "index-int32-1d",
            IndexError,
            r"index 3 at position \(2,\)",
            _f32([1, 2, 3]),
            np.array([0, -3, 3, 7], np.int32),
        ),
        _error(
            "index-empty-axis",
            IndexError,
            r"index 0 at position \(0, 0\).*axis 1 with size 0.*\[0, -1\]",
            np.zeros((3, 0), np.float32),
            np.zeros((2, 1), np.int64),
            axis=1,
        ),
    ]


def _value_errors() -> list[GatherCase]:
    """Arrays of two libraries; object arrays of str only; a StringDType without NA."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = _i64([[0, 1], [2, 0]])
    mixed = r"data and indices must come from one array library; got data: "
    with_na = np.array(["ab", None], dtype=np.dtypes.StringDType(na_object=None))
    one = _i64([1])
    return [
        _error(
            "mixed-numpy-indices", TypeError, mixed, data, idx, numpy_roles=frozenset({"indices"})
        ),
        _error("mixed-numpy-data", TypeError, mixed, data, idx, numpy_roles=frozenset({"data"})),
        _error(
            "object-none",
            TypeError,
            r"data.*str only.*None",
            np.array(["ab", None], dtype=object),
            one,
        ),
        _error(
            "object-int", TypeError, r"data.*got 3 \(int\)", np.array(["ab", 3], dtype=object), one
        ),
        _error(
            "stringdtype-na", TypeError, r"data holds the missing value None.*\(1,\)", with_na, one
        ),
    ]


def gather_error_cases() -> list[GatherCase]:
    """Every error of contract.md section 4 that applies to a gather (section 10)."""
    return [*_metadata_errors(), *_bounds_errors(), *_value_errors()]
