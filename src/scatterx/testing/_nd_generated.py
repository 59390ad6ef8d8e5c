"""Generated scatter_nd and gather_nd cases: rank x depth x batch_dims, every dtype, edges."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from scatterx._dtypes import DTYPE_REDUCTIONS, REDUCTIONS

from ._generated import LAYOUTS, _rng, _specials, dtypes, random_values
from ._nd_cases import GatherNDCase, ScatterNDCase

Array = np.ndarray[Any, Any]

#: The data shapes of the generated cases: ranks 1 to 4.
ND_SHAPES: tuple[tuple[int, ...], ...] = ((6,), (4, 5), (3, 4, 2), (2, 3, 2, 2))
#: The dtypes whose cases take every shape, depth (and batch_dims) of :data:`ND_SHAPES`;
#: each other dtype takes one of them per reduction, in turn.
FULL_DTYPES = ("float32", "int64")


class Layout(NamedTuple):
    """Where one generated call indexes: data's shape, ``batch_dims``, the depth ``k``, and
    the shape of the index rows between the batch dimensions and the columns."""

    shape: tuple[int, ...]
    batch_dims: int
    depth: int
    lead: tuple[int, ...]

    @property
    def label(self) -> str:
        shape = "x".join(map(str, self.shape))
        batch = f"-b{self.batch_dims}" if self.batch_dims else ""
        return f"{shape}{batch}-k{self.depth}"


def _layouts(batch_dims: tuple[int, ...]) -> list[Layout]:
    """Every shape of ND_SHAPES x each ``batch_dims`` below its rank x every depth left;
    the rows one-dimensional or two, in turn."""
    found: list[Layout] = []
    for shape, b in itertools.product(ND_SHAPES, batch_dims):
        for depth in range(1, len(shape) - b + 1):
            lead = (5,) if len(found) % 2 == 0 else (2, 3)
            found.append(Layout(shape, b, depth, lead))
    return found


#: The scatter's layouts (10: every depth of ranks 1-4) and the gather's (19: batch_dims 0-2).
SCATTER_LAYOUTS = _layouts((0,))
GATHER_LAYOUTS = _layouts((0, 1, 2))


def nd_indices(rng: np.random.Generator, layout: Layout, repeat: bool = True) -> Array:
    """Seeded index rows for ``layout``, each index in ``[-size, size-1]`` (negative ones
    included); with ``repeat`` the last row of each batch repeats its first, so that
    duplicates are certain."""
    shape, b, depth, lead = layout
    sizes = shape[b : b + depth]
    rows = rng.integers(-np.array(sizes), np.array(sizes), size=(*shape[:b], *lead, depth))
    if repeat and math.prod(lead) > 1:
        flat = rows.reshape(*shape[:b], -1, depth)
        flat[..., -1, :] = flat[..., 0, :]
    return rows.astype(np.int64)


def _scatter_case(
    name: str, family: str, dtype: Any, layout: Layout, reduction: str
) -> ScatterNDCase:
    rng = _rng(name)
    data = random_values(rng, dtype, layout.shape)
    indices = nd_indices(rng, layout)
    updates = random_values(rng, dtype, indices.shape[:-1] + layout.shape[layout.depth :])
    return ScatterNDCase(name, family, data, indices, updates, reduction=reduction)


def scatter_nd_grid_cases() -> Iterator[ScatterNDCase]:
    """Every dtype x every reduction it defines: FULL_DTYPES on every layout of
    SCATTER_LAYOUTS, every other dtype on one layout per reduction, in turn."""
    turn = itertools.cycle(SCATTER_LAYOUTS)
    for key, dtype in dtypes().items():
        for reduction in (r for r in REDUCTIONS if r in DTYPE_REDUCTIONS[key]):
            layouts = SCATTER_LAYOUTS if key in FULL_DTYPES else [next(turn)]
            for layout in layouts:
                name = f"scatter-nd-{key}-{reduction}-{layout.label}"
                family = f"scatter-nd-generated:{key}"
                yield _scatter_case(name, family, dtype, layout, reduction)


def gather_nd_grid_cases() -> Iterator[GatherNDCase]:
    """Every dtype: FULL_DTYPES on every layout of GATHER_LAYOUTS (ranks 1-4, batch_dims
    0-2, every depth), every other dtype on two of them, in turn."""
    turn = itertools.cycle(GATHER_LAYOUTS)
    for key, dtype in dtypes().items():
        layouts = GATHER_LAYOUTS if key in FULL_DTYPES else [next(turn), next(turn)]
        for layout in layouts:
            name = f"gather-nd-{key}-{layout.label}"
            rng = _rng(name)
            data = random_values(rng, dtype, layout.shape)
            yield GatherNDCase(
                name,
                f"gather-nd-generated:{key}",
                data,
                nd_indices(rng, layout),
                batch_dims=layout.batch_dims,
            )


def scatter_nd_special_cases() -> Iterator[ScatterNDCase]:
    """NaN payloads, signed zeros and infinities meeting under every reduction, many rows
    per slice, for each float dtype."""
    for key in ("float16", "bfloat16", "float32", "float64"):
        if key not in dtypes():
            continue
        values = _specials(dtypes()[key])
        for reduction in REDUCTIONS:
            name = f"scatter-nd-special-{key}-{reduction}"
            rng = _rng(name)
            data = rng.choice(values, size=(4, 3))
            indices = rng.integers(-4, 4, size=(12, 1))
            updates = rng.choice(values, size=(12, 3))
            yield ScatterNDCase(
                name, "scatter-nd-special", data, indices, updates, reduction=reduction
            )


def _layout_cases() -> Iterator[ScatterNDCase | GatherNDCase]:
    """Data, indices and updates as views, negative strides, Fortran order, read-only and
    byte-swapped; int32 indices."""
    slices = Layout((6, 5), 0, 1, (7,))
    for key in ("float32", "int16"):
        dtype = dtypes()[key]
        for label, transform in LAYOUTS.items():
            name = f"scatter-nd-layout-{label}-{key}"
            case = _scatter_case(name, "scatter-nd-edge", dtype, slices, "add")
            data, indices, updates = (transform(np.asarray(a)) for a in case.arrays)
            yield ScatterNDCase(name, case.family, data, indices, updates, reduction="add")
            gathered = f"gather-nd-layout-{label}-{key}"
            rng = _rng(gathered)
            data = transform(random_values(rng, dtype, (6, 5)))
            yield GatherNDCase(gathered, "gather-nd-edge", data, transform(nd_indices(rng, slices)))
        name = f"scatter-nd-int32-indices-{key}"
        case = _scatter_case(name, "scatter-nd-edge", dtype, Layout((3, 4, 2), 0, 2, (6,)), "max")
        yield ScatterNDCase(
            name,
            case.family,
            case.data,
            case.indices.astype(np.int32),
            case.updates,
            reduction="max",
        )
        gathered = f"gather-nd-int32-indices-{key}"
        yield GatherNDCase(
            gathered,
            "gather-nd-edge",
            case.data,
            case.indices.astype(np.int32)[:, :1],
            batch_dims=0,
        )


def _empty_cases() -> Iterator[ScatterNDCase | GatherNDCase]:
    """No index rows; rows of empty slices; an empty batch."""
    for key in ("float32", "StringDType", "bool"):
        dtype = dtypes()[key]
        rng = _rng(f"nd-empty-{key}")
        data = random_values(rng, dtype, (4, 5))
        nothing = np.zeros((0, 1), np.int64)
        for reduction in ("none", "add" if key != "bool" else "max"):
            yield ScatterNDCase(
                f"scatter-nd-empty-rows-{key}-{reduction}",
                "scatter-nd-edge",
                data,
                nothing,
                data[:0],
                reduction=reduction,
            )
        yield GatherNDCase(f"gather-nd-empty-rows-{key}", "gather-nd-edge", data, nothing)
        hollow = random_values(rng, dtype, (3, 0))
        rows = np.array([[2], [-3], [2]])
        yield ScatterNDCase(
            f"scatter-nd-empty-slices-{key}",
            "scatter-nd-edge",
            hollow,
            rows,
            hollow[rows[:, 0]],
            reduction="none",
        )
        yield GatherNDCase(f"gather-nd-empty-slices-{key}", "gather-nd-edge", hollow, rows)
        yield GatherNDCase(
            f"gather-nd-empty-batch-{key}",
            "gather-nd-edge",
            data,
            np.zeros((4, 0, 1), np.int64),
            batch_dims=1,
        )


def nd_edge_cases() -> list[ScatterNDCase | GatherNDCase]:
    """Every ND edge case: layouts and empty arrays, in a fixed order."""
    return [*_layout_cases(), *_empty_cases()]
