"""The ScatterND and GatherND cases (issue 45), and the exact result each contestant is held to.

:func:`.cases.make_case` builds them by name beside the standard cases, and every harness
makes their contestants through :func:`.cases.make_call`, as for the standard cases. The
peers reach each case's rows through :func:`row_views`: the flat row of data that each row of
indices names, with data and updates seen as matrices of those rows.
"""

from __future__ import annotations

import zlib
from typing import Any, NamedTuple

import numpy as np

from .base import BenchCase, Operation


class NDShapes(NamedTuple):
    """An ND case at full size: data's shape, the number of index rows and their length
    ``depth`` (k), what it computes, and whether ``scale`` shrinks it."""

    data: tuple[int, ...]
    rows: int
    depth: int
    op: Operation
    scaled: bool = True


#: The row scatter-add of an embedding gradient of onnxruntime's issue 28584 (token ids
#: uniform over the table, so with duplicates), the row gather of its forward on the same
#: table, and a call too small for anything but the fixed cost.
ND_CASES = {
    "embedding-grad-nd": NDShapes((556416, 80), 481385, 1, "scatter_nd"),
    "row-gather-nd": NDShapes((556416, 80), 481385, 1, "gather_nd"),
    "small-nd": NDShapes((4, 4, 4), 2, 1, "scatter_nd", scaled=False),
}
ND_CASE_NAMES = tuple(ND_CASES)
#: The cases asv times at each of its sizes (the small case is one size).
SIZED_SCATTER_ND = tuple(n for n, s in ND_CASES.items() if s.op == "scatter_nd" and s.scaled)
SIZED_GATHER_ND = tuple(n for n, s in ND_CASES.items() if s.op == "gather_nd" and s.scaled)
#: The reductions the ND tables time by default: the cache update and the gradient.
ND_REDUCTIONS = ("none", "add")


def make_nd_case(name: str, scale: float = 1.0) -> BenchCase:
    """Build the ND case ``name``, its rows and data's first dimension scaled by ``scale``.

    Seeded by the name alone; values in [0.5, 1.5], indices non-negative (the peers take
    them as they are).
    """
    spec = ND_CASES[name]
    factor = scale if spec.scaled else 1.0
    data_shape = (max(1, round(spec.data[0] * factor)), *spec.data[1:])
    rows = max(1, round(spec.rows * factor))
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    data = rng.random(data_shape, dtype=np.float32) + np.float32(0.5)
    columns = [rng.integers(0, n, size=rows, dtype=np.int64) for n in data_shape[: spec.depth]]
    indices = np.stack(columns, axis=-1)
    updates = None
    if spec.op == "scatter_nd":
        shape = (rows, *data_shape[spec.depth :])
        updates = rng.random(shape, dtype=np.float32) + np.float32(0.5)
    return BenchCase(name, data, indices, updates, 0, spec.op)


class RowViews(NamedTuple):
    """A case seen as rows: data as a matrix of ``prod(shape[:k])`` rows (a view), the flat
    row each index row names (1-D int64), updates as one row per index row (None for a
    gather)."""

    data: Any
    rows: Any
    updates: Any


def row_views(case: BenchCase, data: Any = None) -> RowViews:
    """:class:`RowViews` of ``case`` (on NumPy arrays), of ``data`` where given (a copy of
    the case's data, in C order, that the caller owns)."""
    data = case.data if data is None else data
    depth = case.indices.shape[-1]
    lead = data.shape[:depth]
    rows = np.ravel_multi_index(tuple(np.moveaxis(case.indices, -1, 0)), lead).reshape(-1)
    matrix = data.reshape(int(np.prod(lead)), -1)
    updates = None if case.updates is None else case.updates.reshape(rows.size, -1)
    return RowViews(matrix, rows, updates)


def result_shape(case: BenchCase) -> tuple[int, ...]:
    """The shape of the case's result: data's for a scatter, indices' for GatherElements,
    the gathered rows' for GatherND."""
    if case.op == "gather_elements":
        return tuple(case.indices.shape)
    if case.op != "gather_nd":
        return tuple(case.data.shape)
    depth = case.indices.shape[-1]
    return (*case.indices.shape[:-1], *case.data.shape[depth:])


def exact_nd(case: BenchCase, reduction: str = "none") -> Any:
    """The result of the contract's sequential loop, the rows in their C order: ``ufunc.at``
    applies them one by one in that order (the last row wins under ``none``)."""
    if case.op == "gather_nd":
        view = row_views(case)
        return np.take(view.data, view.rows, axis=0).reshape(result_shape(case))
    out = np.array(case.data, order="C", copy=True)
    view = row_views(case, out)
    if reduction == "none":
        # The last row naming each slice: the first in the reversed order.
        _, first = np.unique(view.rows[::-1], return_index=True)
        last = view.rows.size - 1 - first
        view.data[view.rows[last]] = view.updates[last]
    else:
        ufunc = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
        ufunc[reduction].at(view.data, view.rows, view.updates)
    return out


def max_difference(got: Any, exact: Any) -> float:
    """The largest absolute difference between ``got`` (any CPU array) and ``exact``."""
    got = np.asarray(got)
    if got.shape != exact.shape:
        msg = f"a result of shape {got.shape}, where the exact one has {exact.shape}"
        raise ValueError(msg)
    return float(np.max(np.abs(got.astype(np.float64) - exact), initial=0.0))
