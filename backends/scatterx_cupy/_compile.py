"""The CUDA source, its template instantiations per dtype, and the compiled-module cache."""

from __future__ import annotations

import threading
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from scatterx import DTYPE_REDUCTIONS

#: dtype key -> the C++ type the kernels use for it (layout-compatible with cupy's arrays).
CPP_TYPES: dict[str, str] = {
    "bool": "bool",
    "int8": "signed char",
    "int16": "short",
    "int32": "int",
    "int64": "long long",
    "uint8": "unsigned char",
    "uint16": "unsigned short",
    "uint32": "unsigned int",
    "uint64": "unsigned long long",
    "float16": "scx_half",
    "float32": "float",
    "float64": "double",
    "complex64": "scx_c64",
    "complex128": "scx_c128",
}

#: The reduction numbers of the source (SCX_NONE ... SCX_MIN).
REDUCTION_CODES: dict[str, int] = {"none": 0, "add": 1, "mul": 2, "max": 3, "min": 4}

INDEX_TYPES: dict[str, str] = {"int32": "int", "int64": "long long"}
KEY_TYPES: dict[str, str] = {"int32": "int", "int64": "long long"}

#: The dtype keys whose add/mul/max/min go through atomics: no order can change a bit.
ATOMIC_KEYS = frozenset(
    {"bool", *(f"{sign}int{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64))}
)

SERVED: dict[str, frozenset[str]] = {key: DTYPE_REDUCTIONS[key] for key in CPP_TYPES}


def source() -> str:
    """The text of ``_kernels.cu``, shipped inside the package."""
    return resources.files(__package__).joinpath("_kernels.cu").read_text(encoding="utf-8")


def columns_name(key: str, index: str, reduction: str) -> str:
    """Name expression of the column kernel (strategy a)."""
    return f"scx_columns<{CPP_TYPES[key]}, {INDEX_TYPES[index]}, {REDUCTION_CODES[reduction]}>"


def atomics_name(key: str, index: str, reduction: str) -> str:
    """Name expression of the atomic kernel (strategy c)."""
    return f"scx_atomics<{CPP_TYPES[key]}, {INDEX_TYPES[index]}, {REDUCTION_CODES[reduction]}>"


def runs_name(key: str, key_type: str, reduction: str) -> str:
    """Name expression of the ordered reduction of sorted runs (strategy b)."""
    return f"scx_runs<{CPP_TYPES[key]}, {KEY_TYPES[key_type]}, {REDUCTION_CODES[reduction]}>"


def targets_name(index: str, key_type: str) -> str:
    """Name expression of the flat-target kernel that feeds the sort (strategy b)."""
    return f"scx_targets<{INDEX_TYPES[index]}, {KEY_TYPES[key_type]}>"


def uses_atomics(key: str, reduction: str) -> bool:
    """Whether ``reduction`` on ``key`` is order-free, so atomics give the exact answer."""
    return key in ATOMIC_KEYS and reduction != "none"


def name_expressions(key: str) -> list[str]:
    """Every kernel instantiation of one dtype: the contents of its compiled module."""
    names = []
    for reduction in SERVED[key]:
        for index in INDEX_TYPES:
            names.append(columns_name(key, index, reduction))
            if uses_atomics(key, reduction):
                names.append(atomics_name(key, index, reduction))
        names.extend(runs_name(key, key_type, reduction) for key_type in KEY_TYPES)
    return sorted(names)


def target_expressions() -> list[str]:
    """The dtype-independent kernels, compiled into a module of their own."""
    return [targets_name(index, key_type) for index in INDEX_TYPES for key_type in KEY_TYPES]


@lru_cache(maxsize=1)
def default_nan_defines() -> tuple[str, ...]:
    """``-D`` options giving the kernels this CPU's default NaN (x86: negative, quiet).

    NumPy computes inf - inf with the host's instructions; the GPU must write the same bits.
    """
    with np.errstate(invalid="ignore"):
        inf32 = np.array([np.inf], dtype=np.float32)
        inf64 = np.array([np.inf], dtype=np.float64)
        nan32 = int((inf32 - inf32).view(np.uint32)[0])
        nan64 = int((inf64 - inf64).view(np.uint64)[0])
    return (f"-DSCX_DNAN32={nan32:#x}u", f"-DSCX_DNAN64={nan64:#x}ull")


def compile_options() -> tuple[str, ...]:
    """NVRTC options: C++17 for ``if constexpr``; no FMA, no flush-to-zero, as on the CPU."""
    return ("-std=c++17", "--fmad=false", "--ftz=false", *default_nan_defines())


_lock = threading.Lock()
_modules: dict[str, Any] = {}


def module(name: str) -> Any:
    """The ``cupy.RawModule`` of one dtype key (or ``"targets"``), compiled on first use.

    NVRTC runs once per process and dtype; cupy caches the binary on disk as well.
    """
    found = _modules.get(name)
    if found is not None:
        return found
    import cupy

    with _lock:
        found = _modules.get(name)
        if found is None:
            names = target_expressions() if name == "targets" else name_expressions(name)
            found = cupy.RawModule(code=source(), options=compile_options(), name_expressions=names)
            _modules[name] = found
    return found
