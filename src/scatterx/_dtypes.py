"""Dtype families and the reductions the contract defines for each of them."""

from __future__ import annotations

from typing import Any

import numpy as np

REDUCTIONS: tuple[str, ...] = ("none", "add", "mul", "max", "min")

_ALL = frozenset(REDUCTIONS)
_NO_ORDER = frozenset({"none", "add", "mul"})
_STRINGS = frozenset({"none", "add", "max", "min"})
_FIXED_STRINGS = frozenset({"none", "max", "min"})

#: Every dtype key of contract.md section 3, with the reductions defined for it.
DTYPE_REDUCTIONS: dict[str, frozenset[str]] = {
    "bool": _ALL,
    **{f"int{bits}": _ALL for bits in (8, 16, 32, 64)},
    **{f"uint{bits}": _ALL for bits in (8, 16, 32, 64)},
    "float16": _ALL,
    "bfloat16": _ALL,
    "float32": _ALL,
    "float64": _ALL,
    "complex64": _NO_ORDER,
    "complex128": _NO_ORDER,
    "StringDType": _STRINGS,
    "object": _STRINGS,
    "str_": _FIXED_STRINGS,
    "bytes_": _FIXED_STRINGS,
}

DTYPE_KEYS: tuple[str, ...] = tuple(DTYPE_REDUCTIONS)

_WHY_UNDEFINED = {
    ("complex", "max"): "complex numbers have no order",
    ("complex", "min"): "complex numbers have no order",
    ("string", "mul"): "strings cannot be multiplied",
    ("fixed", "mul"): "strings cannot be multiplied",
    ("fixed", "add"): (
        "concatenation would truncate to the fixed width; "
        "use numpy.dtypes.StringDType() for variable-width strings"
    ),
}


def dtype_key(dtype: Any) -> str | None:
    """Return the contract's name for ``dtype``, or None when the contract has no such dtype.

    Byte order is ignored: ``>f4`` and ``<f4`` are both ``float32``.

    Parameters
    ----------
    dtype : numpy.dtype or object
        A dtype, or anything :class:`numpy.dtype` accepts.

    Returns
    -------
    str or None
        A key of ``DTYPE_REDUCTIONS``, or None.
    """
    dt = np.dtype(dtype)
    if dt.kind in "biuf" or dt.kind == "c":
        name = dt.newbyteorder("=").name
        return name if name in DTYPE_REDUCTIONS else None
    if dt.kind == "V" and dt.name == "bfloat16":
        return "bfloat16"
    if dt.kind == "T":
        return "StringDType"
    if dt.kind == "O":
        return "object"
    if dt.kind == "U":
        return "str_"
    if dt.kind == "S":
        return "bytes_"
    return None


def _family(key: str) -> str:
    if key.startswith("complex"):
        return "complex"
    if key in ("StringDType", "object"):
        return "string"
    if key in ("str_", "bytes_"):
        return "fixed"
    return "number"


def why_reduction_undefined(key: str, reduction: str) -> str | None:
    """Return why ``reduction`` is not defined for dtype ``key``, or None when it is."""
    if reduction in DTYPE_REDUCTIONS[key]:
        return None
    return _WHY_UNDEFINED.get((_family(key), reduction), "not defined by the contract")


_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def native(dtype: np.dtype[Any]) -> np.dtype[Any]:
    return dtype if dtype.isnative else np.dtype(dtype.newbyteorder("="))


def numpy_dtype(given: Any, role: str) -> np.dtype[Any]:
    """The NumPy dtype of a dtype of any library: NumPy's own, or one of the same name.

    ``torch.float32`` and ``array_api_strict.float32`` name ``float32``; ``bfloat16`` is
    ml_dtypes'.
    """
    try:
        dtype: np.dtype[Any] | None = np.dtype(given)
    except TypeError:
        dtype = _named_dtype(str(given).rpartition(".")[2])
    if dtype is None:
        msg = f"{role} has dtype {given}, which the contract does not define"
        raise TypeError(msg)
    return dtype


#: The dtype names other libraries share with NumPy: the contract's numbers and bool
#: (bfloat16 is ml_dtypes').
_SHARED_NAMES = frozenset(DTYPE_KEYS[: DTYPE_KEYS.index("complex128") + 1]) - {"bfloat16"}


def _named_dtype(name: str) -> np.dtype[Any] | None:
    if name in _SHARED_NAMES:
        return np.dtype(name)
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            msg = "bfloat16 arrays need ml_dtypes, NumPy's bfloat16: pip install ml_dtypes"
            raise TypeError(msg) from None
        bfloat16: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
        return bfloat16
    return None


def check_index_dtype(index_dtype: Any) -> None:
    torch = type(index_dtype).__module__ == "torch"  # a torch.dtype: tensors have .to()
    index_dtype = numpy_dtype(index_dtype, "indices")
    if native(index_dtype) not in _INDEX_DTYPES:
        convert = "indices.to(torch.int64)" if torch else "indices.astype(np.int64)"
        msg = f"indices must be int32 or int64; got {index_dtype}. Convert them with {convert}"
        raise TypeError(msg)


def data_key(data_dtype: Any) -> str:
    """The contract's dtype key of ``data``'s dtype (of any library); TypeError if none."""
    data_dtype = numpy_dtype(data_dtype, "data")
    key = dtype_key(data_dtype)
    if key is None:
        msg = f"data has dtype {data_dtype}, which the contract does not define"
        raise TypeError(msg)
    return key
