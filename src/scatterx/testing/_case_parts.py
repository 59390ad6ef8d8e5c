"""The pieces the scatter's and the gather's cases share: fields, array makers, errors."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np

Array = np.ndarray[Any, Any]


def dtype_key_of(data: Any) -> str | None:
    """The contract's name of ``data``'s dtype, when it has one (None for a list, say)."""
    from scatterx import dtype_key

    dtype = getattr(data, "dtype", None)
    return None if dtype is None else dtype_key(dtype)


@dataclass(frozen=True)
class BaseCase:
    """What a case of either operation holds (documented on :class:`~scatterx.testing.Case`).

    An operation's case adds the arguments of its call after ``indices`` and names them in
    ``roles`` (its arrays) and ``keywords`` (the rest); the outcome fields are keyword-only.
    """

    operation: ClassVar[str]
    roles: ClassVar[tuple[str, ...]]
    keywords: ClassVar[tuple[str, ...]]

    name: str
    family: str
    data: Any
    indices: Any
    _: KW_ONLY
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
        return tuple(getattr(self, role) for role in self.roles)

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the call.

        Returns
        -------
        dict
            Each name of ``keywords`` (``axis``, and a scatter's ``reduction``) and its value.
        """
        return {name: getattr(self, name) for name in self.keywords}


def f32(values: Any) -> Array:
    """``values`` as a float32 array."""
    return np.array(values, dtype=np.float32)


def i64(values: Any) -> Array:
    """``values`` as an int64 array."""
    return np.array(values, dtype=np.int64)


class ErrorRow(NamedTuple):
    """An error case of either operation, before it is made a Case or a GatherCase: the
    call's arguments (``updates`` and ``reduction`` a scatter's only), what it must raise."""

    name: str
    error: type[Exception]
    match: str
    data: Any
    indices: Any
    axis: Any = 0
    updates: Any = None
    reduction: Any = "none"
    numpy_roles: frozenset[str] = frozenset()


class SharedErrors(NamedTuple):
    """The errors of contract.md section 4 that a scatter and a gather raise alike, in the
    groups each operation's table sets among its own errors."""

    call: list[ErrorRow]  # the axis, scalar data, the ranks
    too_wide: ErrorRow  # indices longer than data off the axis
    index_dtypes: list[ErrorRow]  # indices of a dtype other than int32 and int64
    bounds: list[ErrorRow]  # an index too large, one too negative
    int32_1d: ErrorRow  # an int32 index out of bounds in one dimension


def shared_errors() -> SharedErrors:
    """The errors a scatter and a gather raise alike, on data of shape (3, 4)."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = i64([[0, 1], [2, 0]])
    upd = f32([[1, 2], [3, 4]])
    # NumPy-like arrays are told astype, torch tensors .to (each library's own spelling).
    fix = r"indices\.(astype\(np\.int64\)|to\(torch\.int64\))"
    call = [
        ErrorRow("axis-float", TypeError, r"axis must be an int, got float", data, idx, 1.0, upd),
        ErrorRow("axis-bool", TypeError, r"axis must be an int, got bool", data, idx, True, upd),
        ErrorRow("axis-too-large", ValueError, r"\[-2, 1\].*axis=2", data, idx, 2, upd),
        ErrorRow("axis-too-small", ValueError, r"\[-2, 1\].*axis=-3", data, idx, -3, upd),
        ErrorRow(
            "scalar-data",
            ValueError,
            r"scalars have no axis",
            np.float32(1.0),
            np.int64(0),
            updates=np.float32(2.0),
        ),
        ErrorRow(
            "rank-mismatch",
            ValueError,
            r"indices shape \(2,\).*data shape \(3, 4\)",
            data,
            i64([0, 1]),
            updates=f32([1, 2]),
        ),
    ]
    too_wide = ErrorRow(
        "indices-too-wide",
        ValueError,
        r"dimension 1.*indices has 5, data has 4",
        data,
        np.zeros((1, 5), np.int64),
        updates=np.zeros((1, 5), np.float32),
    )
    index_dtypes = [
        ErrorRow(
            f"indices-{label}", TypeError, rf"{key}.*{fix}", data, idx.astype(key), updates=upd
        )
        for label, key in (("float", "float64"), ("int16", "int16"), ("uint32", "uint32"))
    ]
    bounds = [
        ErrorRow(
            "index-too-large",
            IndexError,
            r"index 5 at position \(0, 1\).*axis 0 with size 3.*\[-3, 2\]",
            data,
            i64([[0, 5], [-9, 1]]),
            updates=upd,
        ),
        ErrorRow(
            "index-too-negative",
            IndexError,
            r"index -5 at position \(1, 0\).*axis 1 with size 4.*\[-4, 3\]",
            data,
            i64([[0, 3], [-5, 1]]),
            axis=1,
            updates=upd,
        ),
    ]
    int32_1d = ErrorRow(
        "index-int32-1d",
        IndexError,
        r"index 3 at position \(2,\)",
        f32([1, 2, 3]),
        np.array([0, -3, 3, 7], np.int32),
        updates=f32([1, 2, 3, 4]),
        # add: on a JIT backend, the signature of the other float32 rows with int32 indices.
        reduction="add",
    )
    return SharedErrors(call, too_wide, index_dtypes, bounds, int32_1d)
