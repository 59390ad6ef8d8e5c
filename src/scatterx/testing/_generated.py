"""Generated conformance cases: dtype x reduction x axis x shape, special values, layouts."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from scatterx._dtypes import DTYPE_REDUCTIONS, REDUCTIONS

from ._cases import Case

Array = np.ndarray[Any, Any]

# (data shape, indices shape, axis): indices smaller than data off the axis, longer along
# it (so duplicates are certain), empty, and every axis of rank 1 to 3, positive and negative.
SHAPES: tuple[tuple[tuple[int, ...], tuple[int, ...], int], ...] = (
    ((6,), (9,), 0),
    ((6,), (0,), -1),
    ((4, 5), (3, 2), 0),
    ((4, 5), (2, 7), 1),
    ((4, 5), (3, 4), -1),
    ((4, 5), (6, 5), -2),
    ((4, 5), (3, 0), 0),
    ((3, 4, 5), (2, 6, 3), 1),
    ((3, 4, 5), (5, 2, 5), -3),
    ((3, 4, 5), (2, 3, 9), 2),
)

#: The dtypes of the strategy cases: a float of each width, an integer, bool.
STRATEGY_DTYPES = ("float32", "float64", "int32", "bool")


class Strategy(NamedTuple):
    """Data and indices of a shape that a parallel backend computes another way."""

    label: str
    data: Array
    indices: Array
    axis: int


_ALPHABET = np.array(list("abcAZé中𝄞 0"), dtype=object)


def _bfloat16() -> Any:
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def dtypes() -> dict[str, np.dtype[Any]]:
    """Every dtype of the contract that can be made here (bfloat16 needs ml_dtypes)."""
    found = {k: np.dtype(k) for k in DTYPE_REDUCTIONS if k[0] in "biuf" and k != "bfloat16"}
    found.update(complex64=np.dtype(np.complex64), complex128=np.dtype(np.complex128))
    bf16 = _bfloat16()
    if bf16 is not None:
        found["bfloat16"] = bf16
    found["StringDType"] = np.dtype(np.dtypes.StringDType())
    found["object"] = np.dtype(object)
    found["str_"] = np.dtype("U3")
    found["bytes_"] = np.dtype("S3")
    return dict(sorted(found.items(), key=lambda kv: list(DTYPE_REDUCTIONS).index(kv[0])))


def _words(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    lengths = rng.integers(0, 4, size=shape)
    flat = ["".join(rng.choice(_ALPHABET, size=n)) for n in lengths.reshape(-1)]
    return np.array(flat, dtype=object).reshape(shape)


def random_values(rng: np.random.Generator, dtype: np.dtype[Any], shape: tuple[int, ...]) -> Array:
    """Seeded values of ``dtype``: full-range integers (so add and mul overflow), normal floats."""
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind in "OTU":
        return _words(rng, shape).astype(dtype)
    if dtype.kind == "S":
        return np.char.encode(_words(rng, shape).astype("U3"), "utf-8").astype("S3")
    return (rng.standard_normal(shape) * 4).astype(dtype)


def random_indices(rng: np.random.Generator, size: int, shape: tuple[int, ...]) -> Array:
    """Seeded indices in ``[-size, size-1]``: negative ones included."""
    return rng.integers(-size, size, size=shape, dtype=np.int64)


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


class GridDraw(NamedTuple):
    """A grid case's name and its seeded draws: the generator's next draws are the case's."""

    name: str
    rng: np.random.Generator
    data: Array
    indices: Array
    axis: int


def grid_draws(prefix: str, dtype: np.dtype[Any]) -> Iterator[GridDraw]:
    """For each shape of SHAPES, data and indices of ``dtype`` drawn under a name that
    begins with ``prefix``: the grid of either operation."""
    for data_shape, index_shape, axis in SHAPES:
        name = f"{prefix}-{data_shape}-{index_shape}-axis{axis}"
        rng = _rng(name)  # seeded by the name with its spaces: the cases' values stay as they were
        data = random_values(rng, dtype, data_shape)
        indices = random_indices(rng, data_shape[axis], index_shape)
        yield GridDraw(name.replace(" ", ""), rng, data, indices, axis)


def grid_cases() -> Iterator[Case]:
    """Every dtype x every reduction it defines x every shape of SHAPES."""
    for key, dtype in dtypes().items():
        # In the contract's order: a set's order changes with the process's hash seed, and
        # pytest-xdist's workers must collect the cases in one order.
        for reduction in (r for r in REDUCTIONS if r in DTYPE_REDUCTIONS[key]):
            for name, rng, data, indices, axis in grid_draws(f"grid-{key}-{reduction}", dtype):
                yield Case(
                    name,
                    f"generated:{key}",
                    data,
                    indices,
                    random_values(rng, dtype, indices.shape),
                    axis=axis,
                    reduction=reduction,
                )


def _specials(dtype: np.dtype[Any]) -> Array:
    """NaN with two payloads, signed zeros and infinities, as ``dtype``."""
    width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    base = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0], dtype=dtype)
    payload = base[:1].view(width).copy()
    payload += 1  # a second quiet NaN, so "which NaN wins" shows in the bits
    return np.concatenate([base, payload.view(dtype)])


def special_cases() -> Iterator[Case]:
    """NaN and -0.0 under max/min (and add, mul), integer overflow, order-sensitive sums."""
    floats = [k for k, d in dtypes().items() if d.kind == "f" or k == "bfloat16"]
    for key in floats:
        dtype = dtypes()[key]
        values = _specials(dtype)
        for reduction in ("max", "min", "add", "mul", "none"):
            name = f"special-{key}-{reduction}"
            rng = _rng(name)
            data = rng.choice(values, size=(4, 3))
            updates = rng.choice(values, size=(12, 3))
            indices = rng.integers(0, 4, size=(12, 3))
            yield Case(name, "special", data, indices, updates, reduction=reduction)
    for key in ("int8", "uint8", "int64", "uint64", "int32"):
        info = np.iinfo(key)
        for reduction in ("add", "mul"):
            data = np.array([info.max, info.min, info.max - 1], dtype=key)
            updates = np.array([info.max, 3, info.max, 2, info.min, 7], dtype=key)
            indices = np.array([0, 0, 1, 1, 2, 2])
            yield Case(
                f"overflow-{key}-{reduction}",
                "special",
                data,
                indices,
                updates,
                reduction=reduction,
            )
    for key in ("float32", "float64", "float16"):
        big = np.finfo(key).max / 4
        updates = np.array([big, 1.0, -big, 1.0, 3.0, -3.0, 1e-3] * 3, dtype=key)
        for reduction in ("add", "mul"):
            yield Case(
                f"order-{key}-{reduction}",
                "special",
                np.ones(2, key),
                np.array([0, 1, 0] * 7),
                updates,
                reduction=reduction,
            )


def strategy_arrays(rng: np.random.Generator, dtype: np.dtype[Any]) -> list[Strategy]:
    """Data and indices of the shapes that take the parallel backends' other paths.

    An embedding (rows looked up by token), a histogram (one short axis, many indices),
    the last axis, and many columns; seeded by ``rng``, drawn in this order.
    """
    tokens = rng.integers(-50, 50, size=(120, 1))
    return [
        Strategy(
            "embedding", random_values(rng, dtype, (50, 16)), np.repeat(tokens, 16, axis=1), 0
        ),
        Strategy(
            "histogram", random_values(rng, dtype, (37,)), random_indices(rng, 37, (5000,)), 0
        ),
        Strategy(
            "last-axis", random_values(rng, dtype, (40, 64)), random_indices(rng, 64, (40, 5)), 1
        ),
        Strategy(
            "columns", random_values(rng, dtype, (64, 33)), random_indices(rng, 64, (200, 33)), 0
        ),
    ]


def strategy_cases() -> Iterator[Case]:
    """Shapes that take the parallel backends' other paths: rows, one column, last axis."""
    for key in STRATEGY_DTYPES:
        dtype = np.dtype(key)
        for reduction in ("none", "add", "max", "mul", "min"):
            rng = _rng(f"strategy-{key}-{reduction}")
            for label, data, indices, axis in strategy_arrays(rng, dtype):
                updates = random_values(rng, dtype, indices.shape)
                yield Case(
                    f"strategy-{label}-{key}-{reduction}",
                    "strategy",
                    data,
                    indices,
                    updates,
                    axis=axis,
                    reduction=reduction,
                )


def _readonly(array: Array) -> Array:
    view = array.view()
    view.flags.writeable = False
    return view


LAYOUTS: dict[str, Callable[[Array], Array]] = {
    "fortran": np.asfortranarray,
    "reversed": lambda a: np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1],
    "strided": lambda a: np.repeat(np.repeat(a, 2, axis=0), 3, axis=1)[::2, ::3],
    "readonly": _readonly,
    "byteswapped": lambda a: a.astype(a.dtype.newbyteorder("S")) if a.dtype.kind in "biufc" else a,
}


def layout_cases() -> Iterator[Case]:
    """Views, negative strides, Fortran order, read-only, byte-swapped, int32 indices."""
    for key in ("float32", "int16", "complex64", "bool", "float16", "StringDType"):
        dtype = dtypes()[key]
        for layout, transform in LAYOUTS.items():
            for reduction in ("none", "add"):
                rng = _rng(f"layout-{key}-{layout}-{reduction}")
                data = random_values(rng, dtype, (7, 6))
                indices = random_indices(rng, 6, (5, 9))
                updates = random_values(rng, dtype, (5, 9))
                yield Case(
                    f"layout-{layout}-{key}-{reduction}",
                    "layout",
                    transform(data),
                    transform(indices),
                    transform(updates),
                    axis=1,
                    reduction=reduction,
                )
        rng = _rng(f"layout-int32-{key}")
        yield Case(
            f"layout-int32-indices-{key}",
            "layout",
            random_values(rng, dtype, (5, 4)),
            random_indices(rng, 5, (8, 3)).astype(np.int32),
            random_values(rng, dtype, (8, 3)),
            reduction="add" if dtype.kind == "c" else "max",
        )
        yield Case(
            f"layout-broadcast-{key}",
            "layout",
            np.broadcast_to(random_values(rng, dtype, (1, 4)), (5, 4)),
            random_indices(rng, 5, (3, 4)),
            random_values(rng, dtype, (3, 4)),
        )
