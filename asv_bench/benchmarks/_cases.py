"""The standard cases of performance.md, at full size and at a small size for quick runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]

CASES = ("square-random", "1d-histogram", "embedding-grad", "last-axis-sparse")
SIZES = ("small", "full")
REDUCTIONS = ("none", "add", "mul", "max", "min")

# (data shape, indices shape, axis) per case and size. "full" is performance.md's table;
# "small" keeps each case's character (duplicates per target, constant rows, few updates
# per row) at 1/16 to 1/64 of the bytes, with at least 16384 updates: enough that automatic
# choice hands the call to the numba backend (scatterx_numba.SMALL_CALL_UPDATES).
SHAPES: dict[str, dict[str, tuple[tuple[int, ...], tuple[int, ...], int]]] = {
    "square-random": {
        "full": ((4096, 4096), (4096, 4096), 0),
        "small": ((512, 512), (512, 512), 0),
    },
    "1d-histogram": {
        "full": ((65536,), (4194304,), 0),
        "small": ((8192,), (262144,), 0),
    },
    "embedding-grad": {
        "full": ((30000, 256), (16384, 256), 0),
        "small": ((3000, 64), (2048, 64), 0),
    },
    "last-axis-sparse": {
        "full": ((8192, 1024), (8192, 64), 1),
        "small": ((1024, 256), (1024, 16), 1),
    },
}


@dataclass(frozen=True)
class Arrays:
    """One case's seeded inputs: float32 data and updates, int64 indices."""

    data: Array
    indices: Array
    updates: Array
    axis: int


def make_case(case: str, size: str) -> Arrays:
    """Build the inputs of ``case`` at ``size``, the same on every run (seeded).

    Values lie in [0.5, 1.5): long products under ``mul`` then neither overflow nor
    reach float32's subnormals, whose slow arithmetic would measure the CPU, not the code.
    """
    data_shape, index_shape, axis = SHAPES[case][size]
    rng = np.random.default_rng(CASES.index(case))
    data = rng.uniform(0.5, 1.5, size=data_shape).astype(np.float32)
    updates = rng.uniform(0.5, 1.5, size=index_shape).astype(np.float32)
    extent = data_shape[axis]
    if case == "embedding-grad":
        # Embedding backward: each row of indices is one token id repeated along the row.
        tokens = rng.integers(0, extent, size=index_shape[0], dtype=np.int64)
        indices = np.repeat(tokens[:, None], index_shape[1], axis=1)
    else:
        indices = rng.integers(0, extent, size=index_shape, dtype=np.int64)
    return Arrays(data, np.ascontiguousarray(indices), updates, axis)
