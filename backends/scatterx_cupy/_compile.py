"""The CUDA source, its template instantiations per dtype, and the compiled-module cache."""

from __future__ import annotations

import threading
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from scatterx.backend import DTYPE_REDUCTIONS

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

#: The CUDA sources: the kernels of every call, then those of the opt-in fast paths; the
#: gather's, compiled alone.
SOURCE = "_kernels.cu"
FAST_SOURCE = "_kernels_fast.cu"
GATHER_SOURCE = "_kernels_gather.cu"
#: The name of the module of the gather kernels (``module(GATHER)``).
GATHER = "gather"

#: itemsize -> the unsigned C++ type that a gather moves elements of that size as.
BITS_TYPES: dict[int, str] = {
    1: "unsigned char",
    2: "unsigned short",
    4: "unsigned int",
    8: "unsigned long long",
    16: "scx_gather_bits16",
}

#: Float dtypes whose max/min run through 64-bit winner keys (value in 32 bits).
WINNER_KEYS = frozenset({"float16", "float32"})


def source(fast: bool = False) -> str:
    """The text of ``_kernels.cu``, shipped inside the package; ``fast``: then the fast paths'."""
    files = resources.files(__package__)
    names = (SOURCE, FAST_SOURCE) if fast else (SOURCE,)
    return "\n".join(files.joinpath(name).read_text(encoding="utf-8") for name in names)


def gather_source() -> str:
    """The text of ``_kernels_gather.cu``: the gather kernels, a module of their own."""
    return resources.files(__package__).joinpath(GATHER_SOURCE).read_text(encoding="utf-8")


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


def bounds_name(index: str) -> str:
    """Name expression of the bounds check that goes before a write into ``out``."""
    return f"scx_bounds<{INDEX_TYPES[index]}>"


def put_last_name(key: str, index: str) -> str:
    """Name expression of the winners' second pass under ``none`` (fast strategy ``winner``)."""
    return f"scx_put_last<{CPP_TYPES[key]}, {INDEX_TYPES[index]}>"


def win_last_name(index: str) -> str:
    """Name expression of the winners' first pass under ``none`` (dtype-independent)."""
    return f"scx_win_last<{INDEX_TYPES[index]}>"


def best_names(key: str, index: str, reduction: str) -> tuple[str, str]:
    """Name expressions of both winner passes of float16/float32 max/min."""
    args = f"{CPP_TYPES[key]}, {INDEX_TYPES[index]}, {REDUCTION_CODES[reduction]}"
    return f"scx_win_best<{args}>", f"scx_put_best<{args}>"


def warps_name(key: str, index: str, reduction: str) -> str:
    """Name expression of the warp-per-column kernel (fast strategy ``warps``)."""
    return f"scx_warps<{CPP_TYPES[key]}, {INDEX_TYPES[index]}, {REDUCTION_CODES[reduction]}>"


def row_keys_name(index: str, key_type: str) -> str:
    """Name expression of the row check and keys of fast strategy ``rows`` (dtype-independent)."""
    return f"scx_row_keys<{INDEX_TYPES[index]}, {KEY_TYPES[key_type]}>"


def row_runs_name(key: str, key_type: str, reduction: str) -> str:
    """Name expression of the ordered walk of sorted rows (fast strategy ``rows``)."""
    return f"scx_row_runs<{CPP_TYPES[key]}, {KEY_TYPES[key_type]}, {REDUCTION_CODES[reduction]}>"


def gather_name(itemsize: int, index: str, canonical_bool: bool = False) -> str:
    """Name expression of the gather kernel for elements of ``itemsize`` bytes.

    ``canonical_bool``: the kernel for bool data, which writes each element's 0/1.
    """
    flag = "true" if canonical_bool else "false"
    return f"scx_gather<{BITS_TYPES[itemsize]}, {INDEX_TYPES[index]}, {flag}>"


def gather_expressions() -> list[str]:
    """Every gather kernel: the contents of the gather module, for every served dtype."""
    names = [gather_name(size, index) for size in BITS_TYPES for index in INDEX_TYPES]
    return names + [gather_name(1, index, canonical_bool=True) for index in INDEX_TYPES]


def uses_winners(key: str, reduction: str) -> bool:
    """Whether the winner passes serve ``reduction`` on ``key``."""
    return reduction == "none" or (key in WINNER_KEYS and reduction in ("max", "min"))


def uses_atomics(key: str, reduction: str) -> bool:
    """Whether ``reduction`` on ``key`` is order-free, so atomics give the exact answer."""
    return key in ATOMIC_KEYS and reduction != "none"


def name_expressions(key: str, fast: bool = False) -> list[str]:
    """Every kernel instantiation of one dtype: the contents of its compiled module.

    ``fast``: those of the fast paths instead, compiled into a module of their own, so that
    turning them on never changes the default kernels.
    """
    names = []
    for reduction in SERVED[key]:
        names.extend(_fast_names(key, reduction) if fast else _names(key, reduction))
    return sorted(names)


def _names(key: str, reduction: str) -> list[str]:
    names = [runs_name(key, key_type, reduction) for key_type in KEY_TYPES]
    for index in INDEX_TYPES:
        names.append(columns_name(key, index, reduction))
        if uses_atomics(key, reduction):
            names.append(atomics_name(key, index, reduction))
    return names


def _fast_names(key: str, reduction: str) -> list[str]:
    if uses_atomics(key, reduction):
        return []
    names = [row_runs_name(key, key_type, reduction) for key_type in KEY_TYPES]
    for index in INDEX_TYPES:
        names.append(warps_name(key, index, reduction))
        if reduction == "none":
            names.append(put_last_name(key, index))
        elif uses_winners(key, reduction):
            names.extend(best_names(key, index, reduction))
    return names


def target_expressions(fast: bool = False) -> list[str]:
    """The dtype-independent kernels, compiled into a module of their own (one per ``fast``):
    the sort's targets and the bounds check of ``out=``; the fast paths' winners and row keys."""
    if not fast:
        names = [targets_name(index, key_type) for index in INDEX_TYPES for key_type in KEY_TYPES]
        return names + [bounds_name(index) for index in INDEX_TYPES]
    names = [win_last_name(index) for index in INDEX_TYPES]
    names += [row_keys_name(index, key) for index in INDEX_TYPES for key in KEY_TYPES]
    return names


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
_modules: dict[tuple[str, bool], Any] = {}


def expressions(name: str, fast: bool = False) -> list[str]:
    """The kernels of ``module(name, fast)``: a dtype key's, ``"targets"`` or ``GATHER``."""
    if name == GATHER:
        return gather_expressions()
    return target_expressions(fast) if name == "targets" else name_expressions(name, fast)


def module(name: str, fast: bool = False) -> Any:
    """The ``cupy.RawModule`` of one dtype key (or ``"targets"``, or ``GATHER``), compiled
    on first use.

    NVRTC runs once per process, dtype and ``fast``; cupy caches the binary on disk as well.
    ``fast``: the module of the fast paths' kernels (see ``name_expressions``). ``GATHER``
    is compiled from ``_kernels_gather.cu`` alone.
    """
    found = _modules.get((name, fast))
    if found is not None:
        return found
    import cupy

    with _lock:
        found = _modules.get((name, fast))
        if found is None:
            names = expressions(name, fast)
            code = gather_source() if name == GATHER else source(fast)
            found = cupy.RawModule(code=code, options=compile_options(), name_expressions=names)
            _modules[name, fast] = found
    return found
