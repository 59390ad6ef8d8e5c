"""Generated gather cases: dtype x shape, NaN payloads, layouts, the parallel paths, edges."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ._edge_cases import WORDS, raw_bools, string_dtypes
from ._gather_cases import GatherCase
from ._generated import (
    LAYOUTS,
    STRATEGY_DTYPES,
    _rng,
    dtypes,
    grid_draws,
    random_indices,
    random_values,
    strategy_arrays,
)

Array = np.ndarray[Any, Any]


def gather_grid_cases() -> Iterator[GatherCase]:
    """Every dtype of the contract x every shape of SHAPES: each axis of rank 1 to 3,
    negative axes and indices, duplicates, empty indices, indices shorter than data off
    the axis and longer along it."""
    for key, dtype in dtypes().items():
        for name, _, data, indices, axis in grid_draws(f"gather-grid-{key}", dtype):
            yield GatherCase(name, f"gather-generated:{key}", data, indices, axis=axis)


def _payloads(dtype: np.dtype[Any]) -> Array:
    """Floats whose bits a gather must keep: quiet NaNs of two payloads and both signs, a
    signalling NaN, signed zeros and infinities, the smallest subnormals."""
    width = np.dtype(f"u{dtype.itemsize}")
    infinity, nan, sign = (int(np.array(v, dtype).view(width)) for v in (np.inf, np.nan, -0.0))
    patterns = [  # NumPy's NaN is the quiet NaN of no payload
        nan,
        nan | 1,
        sign | nan,
        infinity | 1,  # signalling: converting it through another float type quiets it
        0,
        sign,
        infinity,
        sign | infinity,
        1,
        sign | 1,
    ]
    return np.array(patterns, dtype=width).view(dtype)


def gather_special_cases() -> Iterator[GatherCase]:
    """NaN payloads, signalling NaNs, -0.0 and subnormals of every float and complex dtype,
    gathered in a shuffled order with duplicates: a gather copies bits."""
    for key, dtype in dtypes().items():
        if dtype.kind not in "fc" and key != "bfloat16":
            continue
        name = f"gather-special-{key}"
        rng = _rng(name)
        part = np.dtype(f"f{dtype.itemsize // 2}") if dtype.kind == "c" else dtype
        values = _payloads(part)
        if dtype.kind == "c":  # every pair of parts, as the real and imaginary parts
            values = np.stack(np.meshgrid(values, values), axis=-1).reshape(-1).view(dtype)
        data = rng.permutation(values).reshape(-1, 2)
        indices = rng.integers(-len(data), len(data), size=(2 * len(data), 2))
        yield GatherCase(name, "gather-special", data, indices)
        if dtype.kind == "f":
            swapped = data.astype(dtype.newbyteorder("S"))
            yield GatherCase(f"{name}-byteswapped", "gather-special", swapped, indices)


def _transposed(array: Array) -> Array:
    """A view whose axes are permuted in memory: neither C nor Fortran order."""
    return np.ascontiguousarray(array.transpose(2, 0, 1)).transpose(1, 2, 0)


_GATHER_LAYOUTS: dict[str, Callable[[Array], Array]] = {**LAYOUTS, "transposed": _transposed}
#: The dtypes of the layout cases: each kind of kernel type, bool and strings included.
LAYOUT_DTYPES = ("float32", "int16", "complex64", "bool", "float16", "StringDType", "bytes_")


def gather_layout_cases() -> Iterator[GatherCase]:
    """Views, negative strides, Fortran and permuted order, read-only, byte-swapped, zero
    strides, int32 indices; of data and of indices, in three dimensions."""
    for key in LAYOUT_DTYPES:
        dtype = dtypes()[key]
        for layout, transform in _GATHER_LAYOUTS.items():
            rng = _rng(f"gather-layout-{key}-{layout}")
            yield GatherCase(
                f"gather-layout-{layout}-{key}",
                "gather-layout",
                transform(random_values(rng, dtype, (5, 4, 6))),
                transform(random_indices(rng, 4, (4, 7, 5))),
                axis=1,
            )
        rng = _rng(f"gather-layout-int32-{key}")
        yield GatherCase(
            f"gather-layout-int32-indices-{key}",
            "gather-layout",
            random_values(rng, dtype, (5, 4, 6)),
            random_indices(rng, 6, (3, 4, 9)).astype(np.int32),
            axis=-1,
        )
        yield GatherCase(
            f"gather-layout-broadcast-{key}",
            "gather-layout",
            np.broadcast_to(random_values(rng, dtype, (1, 4, 6)), (5, 4, 6)),
            np.broadcast_to(random_indices(rng, 5, (1, 3, 6)), (8, 3, 6)),
        )


def gather_strategy_cases() -> Iterator[GatherCase]:
    """The shapes that take the parallel backends' other paths (those of the scatter)."""
    for key in STRATEGY_DTYPES:
        rng = _rng(f"gather-strategy-{key}")
        for label, data, indices, axis in strategy_arrays(rng, np.dtype(key)):
            yield GatherCase(
                f"gather-strategy-{label}-{key}", "gather-strategy", data, indices, axis=axis
            )


def _string_edge_cases() -> Iterator[GatherCase]:
    """Long strings (kept outside a StringDType array), NUL characters, non-ASCII."""
    rng = np.random.default_rng(13)
    words = np.array(WORDS, dtype=object)
    for name, dtype in string_dtypes().items():
        data = rng.choice(words, size=(4, 3)).astype(dtype)
        yield GatherCase(
            f"gather-edge-string-{name}",
            "gather-edge",
            data,
            rng.integers(-4, 4, size=(9, 3)),
        )
        yield GatherCase(
            f"gather-edge-string-empty-{name}", "gather-edge", data, np.zeros((0, 3), np.int64)
        )


def _bool_edge_cases() -> Iterator[GatherCase]:
    """Bools whose bytes are not 0/1: results hold 0/1, on every backend alike."""
    data = raw_bools([2, 0, 255, 1, 0, 7, 128, 1])
    # int64: on a JIT backend, int32 indices on bool data would be a signature of their own.
    indices = np.array([0, 1, 2, 3, 4, 5, 6, 7, -8, -6, 2, 2], np.int64)
    yield GatherCase("gather-edge-bool-bytes", "gather-edge", data, indices)
    yield GatherCase(
        "gather-edge-bool-bytes-2d",
        "gather-edge",
        data.reshape(2, 4),
        np.array([[3, 2, 1, 0, -1, 0, 2]]),
        axis=1,
    )


def _shape_edge_cases() -> Iterator[GatherCase]:
    """Empty dimensions of data (off the axis, and the axis itself under empty indices), a
    single index, ranks four and five."""
    rng = _rng("gather-edge-shapes")
    shapes = {
        "empty-data-off-axis": ((0, 5), (0, 3), 1),
        "empty-axis-empty-indices": ((3, 0), (2, 0), 1),
        "empty-along-axis": ((4, 5), (0, 5), 0),
        "one-index": ((7,), (1,), 0),
        "rank4": ((2, 3, 4, 5), (2, 2, 6, 5), 2),
        "rank5": ((2, 1, 3, 4, 2), (1, 1, 3, 7, 2), -2),
    }
    for label, (data_shape, index_shape, axis) in shapes.items():
        for key in ("float64", "int8"):
            yield GatherCase(
                f"gather-edge-{label}-{key}",
                "gather-edge",
                random_values(rng, np.dtype(key), data_shape),
                random_indices(rng, data_shape[axis], index_shape),
                axis=axis,
            )


def gather_edge_cases() -> list[GatherCase]:
    """Every gather edge case, in a fixed order."""
    return [*_string_edge_cases(), *_bool_edge_cases(), *_shape_edge_cases()]
