"""Arrays for the ScatterND and GatherND tests: values of every dtype family, and rows of
indices of both signs, repeated or distinct."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]
Shape = tuple[int, ...]

WORDS = np.array(["", "a", "b", "ab", "ba", "zz", "é", "a\x00"], dtype=object)


def dtype_of(key: str) -> np.dtype[Any]:
    """The dtype a test names ``key`` (``"StringDType"`` for NumPy's variable strings)."""
    return np.dtypes.StringDType() if key == "StringDType" else np.dtype(key)


def values(key: str, rng: np.random.Generator, shape: Shape, nans: bool) -> Array:
    """Values of ``key``: raw bool bytes (not only 0 and 1), small integers, floats with
    -0.0 (and NaN where ``nans``: two NaNs meeting in add or mul give a NaN of any
    payload), short strings."""
    dtype = dtype_of(key)
    if dtype.kind == "b":
        return rng.integers(0, 256, shape).astype(np.uint8).view(bool)
    if dtype.kind in "iu":
        low = 0 if dtype.kind == "u" else -4
        return rng.integers(low, 5, shape).astype(dtype)
    if dtype.kind in "OT":
        return np.array(WORDS[rng.integers(0, len(WORDS), shape)], dtype=dtype)
    drawn = rng.standard_normal(shape)
    if dtype.kind == "c":
        drawn = drawn + 1j * rng.standard_normal(shape)
    drawn = drawn.astype(dtype)
    flat = drawn.reshape(-1)
    flat[::5] = -0.0
    if nans:
        flat[2::7] = np.nan
    return drawn


def rows(rng: np.random.Generator, sizes: Shape, lead: Shape, repeat: bool = True) -> Array:
    """Rows of ``len(sizes)`` indices of both signs, shaped ``lead + (k,)``: drawn from a
    few (so repeated) when ``repeat``, else distinct."""
    n, depth = math.prod(lead), len(sizes)
    every = np.stack(np.unravel_index(np.arange(math.prod(sizes)), sizes), -1)
    every -= rng.integers(0, 2, every.shape) * np.array(sizes)  # negative half the time
    if repeat:
        pool = every[rng.integers(0, len(every), max(1, (n + 1) // 2))]
        picked = pool[rng.integers(0, len(pool), n)]
    else:
        picked = every[rng.permutation(len(every))[:n]]
    return picked.reshape(*lead, depth).astype(np.int64)
