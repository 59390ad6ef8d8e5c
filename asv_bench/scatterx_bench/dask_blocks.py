"""The standard cases in a few blocks (issue 46): the lazy call's ``compute`` on the threaded
scheduler against the in-memory numba call, and against dask's own floor.

performance.md: on the threaded scheduler, within 1.5x of the in-memory numba call. Here
data is split into ``k`` blocks along a dimension other than the scatter axis where it has
one (square-random and embedding-grad: blocks of columns; last-axis-sparse: blocks of
rows), along the axis where it has none (1d-histogram); indices and updates are lined up
with data (its chunks off the axis, the axis whole), all made with ``da.from_array`` of the
case's NumPy arrays: each block is a view of them. The *floor* is dask's own compute of a
copy of data's blocks, ``data.map_blocks(np.copy).compute()``: the blocks written once and
joined into one NumPy array (``dask.array.core.finalize`` allocates that array on every
compute with more than one block), which any lazy result of data's chunks pays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import BenchCase, Call
from .dask_scaling import _module

#: The numbers of blocks timed by default.
BLOCKS = (2, 4)


def split_dimension(case: BenchCase) -> int:
    """The dimension data is split along: the last one other than the axis, else the axis."""
    others = [d for d in range(np.ndim(case.data)) if d != case.axis]
    return others[-1] if others else case.axis


def blocked(case: BenchCase, blocks: int) -> BenchCase:
    """``case`` (NumPy arrays) as Dask arrays: data in ``blocks`` blocks along
    :func:`split_dimension`, indices and updates lined up with it (data's chunks off the
    axis, the axis whole unless it is the one split)."""
    da = _module("dask.array")
    split = split_dimension(case)
    step = -(-case.data.shape[split] // blocks)

    def chunks(array: Any) -> tuple[Any, ...]:
        whole: list[int] = [-1] * array.ndim
        # along the axis, indices and updates in blocks of their own; else data's
        whole[split] = -(-array.shape[split] // blocks) if split == case.axis else step
        return tuple(whole)

    return case.to(lambda array: da.from_array(array, chunks=chunks(array)))


def label(blocks: int) -> str:
    return f"compute, {blocks} blocks"


def floor_label(blocks: int) -> str:
    return f"floor, {blocks} blocks"


def block_calls(moved: BenchCase, reduction: str, blocks: int) -> dict[str, Call]:
    """The lazy call's compute on ``moved`` (of :func:`blocked`) and its floor."""
    from scatterx import scatter_elements

    data, indices, updates = moved.arrays

    def compute() -> Any:
        lazy = scatter_elements(data, indices, updates, axis=moved.axis, reduction=reduction)
        return lazy.compute(scheduler="threads")

    def floor() -> Any:
        return data.map_blocks(np.copy, dtype=data.dtype).compute(scheduler="threads")

    return {label(blocks): compute, floor_label(blocks): floor}


def print_blocks(rows: list[tuple[str, str, dict[str, float]]], numba: str, target: float) -> None:
    """The table of the standard cases in blocks: median ms and ratios to numba."""
    found = sorted({int(n.split(", ")[1].split()[0]) for _, _, t in rows for n in t if "," in n})
    if not found:
        return
    print(
        "\nthe standard cases in blocks (data split off the axis, or along it where it has no "
        "other dimension; da.from_array views), compute on the threaded scheduler "
        "(median ms, ratio to the numba call)"
    )
    header = ["case", "red", numba]
    for k in found:
        header += [label(k), "ratio", floor_label(k), "ratio"]
    lines = [header]
    ratios: dict[int, list[float]] = {k: [] for k in found}
    for case, reduction, times in rows:
        fast = times.get(numba)
        cells = [case, reduction, "-" if fast is None else f"{fast:.2f}"]
        for k in found:
            for name in (label(k), floor_label(k)):
                value = times.get(name)
                cells.append("-" if value is None else f"{value:.2f}")
                ratio = None if value is None or fast is None else value / fast
                cells.append("-" if ratio is None else f"{ratio:.2f}x")
                if ratio is not None and name == label(k):
                    ratios[k].append(ratio)
        lines.append(cells)
    widths = [max(len(line[c]) for line in lines) for c in range(len(header))]
    for line in lines:
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))
    for k, values in ratios.items():
        if values:
            print(f"{k} blocks: compute / numba highest {max(values):.2f}x (target <= {target}x)")
