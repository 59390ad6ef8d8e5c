"""Conformance cases of scatter_nd and gather_nd: their case types, and every error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ._case_parts import BaseCase
from ._case_parts import f32 as _f32
from ._case_parts import i64 as _i64
from ._cases import Case
from ._gather_cases import GatherCase


@dataclass(frozen=True)
class ScatterNDCase(BaseCase):
    """One call of ``scatter_nd`` and what it must do (contract section 14).

    As :class:`~scatterx.testing.Case`: a case either succeeds, and then every backend
    must equal :func:`~scatterx.testing.reference_scatter_nd` bit for bit, or it raises
    ``error`` with a message matching the regular expression ``match``.

    Attributes
    ----------
    name, family : str
        The case's unique name (all begin with ``scatter-nd-``), and its family of cases.
    data, indices, updates, reduction
        The arguments of the call.
    expected, error, match, tags, numpy_roles
        As on :class:`~scatterx.testing.Case`.
    """

    operation: ClassVar[str] = "scatter_nd"
    roles: ClassVar[tuple[str, ...]] = ("data", "indices", "updates")
    keywords: ClassVar[tuple[str, ...]] = ("reduction",)

    updates: Any
    reduction: Any = "none"

    @property
    def signature(self) -> str:
        """What a JIT backend compiles for the case: ``"<dtype key>-<reduction>"``."""
        # A JIT backend may run it on its ScatterElements kernels: the same signature.
        return f"{self.dtype_key}-{self.reduction}"


@dataclass(frozen=True)
class GatherNDCase(BaseCase):
    """One call of ``gather_nd`` and what it must do (contract section 14).

    As :class:`~scatterx.testing.GatherCase`, against
    :func:`~scatterx.testing.reference_gather_nd`.

    Attributes
    ----------
    name, family : str
        The case's unique name (all begin with ``gather-nd-``), and its family of cases.
    data, indices, batch_dims
        The arguments of the call.
    expected, error, match, tags, numpy_roles
        As on :class:`~scatterx.testing.Case`.
    """

    operation: ClassVar[str] = "gather_nd"
    roles: ClassVar[tuple[str, ...]] = ("data", "indices")
    keywords: ClassVar[tuple[str, ...]] = ("batch_dims",)

    batch_dims: Any = 0

    @property
    def signature(self) -> str:
        """What a JIT backend compiles for the case: ``"<dtype key>-gather"``."""
        return f"{self.dtype_key}-gather"


#: A case of any operation: what the runner, the pytest matrix and ``check`` take.
ConformanceCase = Case | GatherCase | ScatterNDCase | GatherNDCase

_MIXED = r"must come from one array library; got data: "
_DEPTH = r"last dimension of indices \(the index columns, {k}\) must be from 1 to the rank"


def scatter_nd_error_cases() -> list[ScatterNDCase]:
    """The errors of contract sections 4 and 14 that a ScatterND call can provoke."""
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    rows = _i64([[0, 1], [1, 2]])
    slices = np.zeros((2, 4), np.float32)

    def case(name: str, error: type[Exception], match: str, *arguments: Any, **kw: Any) -> Any:
        return ScatterNDCase(
            f"scatter-nd-error-{name}",
            "scatter-nd-errors",
            *arguments,
            error=error,
            match=match,
            **kw,
        )

    return [
        case("index-too-large", IndexError, r"index 3 at position \(1, 1\).*axis 1 with size 3",
             data, _i64([[0, 1], [1, 3]]), slices),
        case("index-too-negative", IndexError, r"index -3 at position \(0, 0\).*axis 0 with size 2",
             data, _i64([[-3, 1], [1, 9]]), slices),
        case("index-c-order", IndexError, r"index 5 at position \(0, 0, 2\).*axis 2 with size 4",
             data, np.asfortranarray(_i64([[[0, 0, 5], [9, 0, 0]]])), _f32([[0, 0]])),
        case("index-int32", IndexError, r"index 2 at position \(1, 0\).*axis 0 with size 2",
             data, rows.astype(np.int32) * 2, slices, reduction="add"),
        case("depth-zero", ValueError, _DEPTH.format(k=0), data, np.zeros((2, 0), np.int64),
             np.zeros((2, 2, 3, 4), np.float32)),
        case("depth-past-rank", ValueError, _DEPTH.format(k=4), data, np.zeros((2, 4), np.int64),
             _f32([0, 0])),
        case("updates-shape", ValueError, r"updates must have the shape.*\(2, 4\); got.*\(2, 3\)",
             data, rows, np.zeros((2, 3), np.float32)),
        case("updates-dtype", TypeError, r"updates float64 and data float32",
             data, rows, slices.astype(np.float64)),
        case("indices-float", TypeError, r"indices must be int32 or int64; got float64",
             data, rows.astype(np.float64), slices),
        case("indices-scalar", ValueError, r"indices must have at least one dimension",
             data, np.int64(0), np.float32(0)),
        case("scalar-data", ValueError, r"data must have at least one dimension",
             np.float32(1), _i64([0]), np.float32(2)),
        case("reduction-name", ValueError, r"one of 'none'.*got 'sum'",
             data, rows, slices, reduction="sum"),
        case("complex-max", TypeError, r"'max' is not defined for dtype complex64",
             data.astype(np.complex64), rows, slices.astype(np.complex64), reduction="max"),
        case("mixed-numpy-indices", TypeError, _MIXED, data, rows, slices,
             numpy_roles=frozenset({"indices"})),
    ]  # fmt: skip


def gather_nd_error_cases() -> list[GatherNDCase]:
    """The errors of contract sections 4 and 14 that a GatherND call can provoke."""
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    batch = r"batch_dims must be in \[0, {top}\]"

    def case(name: str, error: type[Exception], match: str, *arguments: Any, **kw: Any) -> Any:
        return GatherNDCase(
            f"gather-nd-error-{name}",
            "gather-nd-errors",
            *arguments,
            error=error,
            match=match,
            **kw,
        )

    return [
        case("index-too-large", IndexError, r"index 4 at position \(1, 0, 1\).*axis 2 with size 4",
             data, _i64([[[0, 1]], [[2, 4]]]), batch_dims=1),
        case("index-too-negative", IndexError, r"index -4 at position \(1, 0\).*axis 0 with size 2",
             data, _i64([[1, 2], [-4, 0]])),
        case("index-int32", IndexError, r"index 3 at position \(0, 0\).*axis 1 with size 3",
             data, np.array([[3], [0]], np.int32), batch_dims=1),
        case("depth-zero", ValueError, _DEPTH.format(k=0), data, np.zeros((2, 0), np.int64)),
        case("depth-past-rank", ValueError, _DEPTH.format(k=3) + r" of data less batch_dims",
             data, np.zeros((2, 3), np.int64), batch_dims=1),
        case("batch-dims-too-large", ValueError, batch.format(top=1),
             data, np.zeros((2, 1), np.int64), batch_dims=2),
        case("batch-dims-negative", ValueError, batch.format(top=1),
             data, np.zeros((2, 1), np.int64), batch_dims=-1),
        case("batch-dims-unequal", ValueError, r"first 1 dimensions \(batch_dims\).*must be equal",
             data, np.zeros((3, 1), np.int64), batch_dims=1),
        case("batch-dims-float", TypeError, r"batch_dims must be an int, got float",
             data, np.zeros((2, 1), np.int64), batch_dims=1.0),
        case("batch-dims-bool", TypeError, r"batch_dims must be an int, got bool",
             data, np.zeros((2, 1), np.int64), batch_dims=True),
        case("indices-float", TypeError, r"indices must be int32 or int64; got float64",
             data, np.zeros((2, 1))),
        case("scalar-data", ValueError, r"data must have at least one dimension",
             np.float32(1), _i64([0])),
        case("mixed-numpy-data", TypeError, _MIXED, data, _i64([[1]]),
             numpy_roles=frozenset({"data"})),
    ]  # fmt: skip
