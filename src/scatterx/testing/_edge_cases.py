"""Edge cases an adversarial pass found: strings, the sign of a NaN, bools of raw bytes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ._cases import Case
from ._generated import dtypes

Array = np.ndarray[Any, Any]

# Short and long strings (16 bytes and more live outside the array in StringDType), NUL
# characters inside and at the end (code-point order puts "a\0\0" below "a\0b"), non-ASCII.
WORDS = ["", "a", "a\0", "a\0\0", "a\0b", "\0", "b" * 16, "é" * 17, "中a\0" * 9, "z" * 40]


def string_dtypes() -> dict[str, np.dtype[Any]]:
    return {
        "StringDType": np.dtype(np.dtypes.StringDType()),
        "StringDType-na": np.dtype(np.dtypes.StringDType(na_object=None)),
        "object": np.dtype(object),
    }


def string_edge_cases() -> Iterator[Case]:
    """Long strings, NUL characters and a StringDType with ``na_object`` (holding no NA)."""
    rng = np.random.default_rng(8)
    words = np.array(WORDS, dtype=object)
    for name, dtype in string_dtypes().items():
        for reduction in ("none", "add", "max", "min"):
            data = rng.choice(words, size=(4, 3)).astype(dtype)
            updates = rng.choice(words, size=(9, 3)).astype(dtype)
            indices = rng.integers(-4, 4, size=(9, 3))
            yield Case(
                f"edge-string-{name}-{reduction}",
                "edge",
                data,
                indices,
                updates,
                reduction=reduction,
            )


def _float_dtypes() -> dict[str, np.dtype[Any]]:
    return {k: d for k, d in dtypes().items() if d.kind == "f" or k == "bfloat16"}


def nan_sign_cases() -> Iterator[Case]:
    """NaNs that arithmetic makes from no NaN (inf - inf, 0 * inf: x86's negative default
    NaN) or carries from one NaN operand (its sign kept): their bits are the answer."""
    for key, dtype in _float_dtypes().items():
        inf, nan = np.array([np.inf, np.nan], dtype=dtype)
        minus_nan = -nan
        pairs = {
            "add": [(inf, -inf), (-inf, inf), (minus_nan, 1), (1, minus_nan), (nan, -2)],
            "mul": [(0, inf), (-inf, 0), (minus_nan, 2), (1, minus_nan), (-0.0, -inf)],
        }
        for reduction, operands in pairs.items():
            data = np.array([old for old, _ in operands], dtype=dtype)
            updates = np.array([new for _, new in operands], dtype=dtype)
            indices = np.arange(len(operands))
            yield Case(
                f"edge-nan-sign-{key}-{reduction}",
                "edge",
                data,
                indices,
                updates,
                reduction=reduction,
            )


def raw_bools(values: list[int]) -> Array:
    """A bool array holding the raw bytes given: any nonzero byte reads as True."""
    return np.array(values, dtype=np.uint8).view(bool)


def bool_byte_cases() -> Iterator[Case]:
    """Bools whose bytes are not 0/1: results hold 0/1, on every backend alike."""
    data = raw_bools([2, 0, 255, 1, 0, 7])
    updates = raw_bools([0, 3, 128, 0, 1, 0, 9, 0])
    indices = np.array([0, 1, 2, 3, 0, 2, -1, 3])
    for reduction in ("none", "add", "mul", "max", "min"):
        yield Case(
            f"edge-bool-bytes-{reduction}", "edge", data, indices, updates, reduction=reduction
        )
        yield Case(
            f"edge-bool-bytes-empty-{reduction}",
            "edge",
            data,
            np.zeros(0, np.int64),
            raw_bools([]),
            reduction=reduction,
        )


def string_error_cases() -> Iterator[Case]:
    """Object arrays hold str only; a StringDType holds no missing value."""
    words = np.array(["ab", "cd"], dtype=object)
    with_na = np.array(["ab", None], dtype=np.dtypes.StringDType(na_object=None))
    one = np.array([1])
    for name, data, updates, match in [
        ("object-none", words, np.array([None], dtype=object), r"updates.*str only.*None"),
        ("object-int", np.array(["ab", 3], dtype=object), words[:1], r"data.*got 3 \(int\)"),
        ("stringdtype-na", with_na, with_na[:1], r"data holds the missing value None.*\(1,\)"),
    ]:
        yield Case(
            f"error-{name}",
            "errors",
            data,
            one,
            updates,
            reduction="add",
            error=TypeError,
            match=match,
        )


def edge_cases() -> list[Case]:
    """Every edge case, in a fixed order."""
    return [
        *string_edge_cases(),
        *nan_sign_cases(),
        *bool_byte_cases(),
        *string_error_cases(),
    ]
