"""The rule that an ``out=`` array's strides prove its elements apart (contract section 7).

A module of its own, importing nothing of scatterx: the checks of ``out`` in
:mod:`scatterx._check.out` and the torch host below them (its adapter's ``check_out``,
the fake run of its ``*_out`` operators) ask the same rule without an import circle.
"""

from __future__ import annotations


def refuse_self_overlap(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> None:
    """Raise ValueError unless a layout is proven free of self-overlap (contract section 7).

    ``strides`` and ``itemsize`` in one unit (bytes, or elements with ``itemsize=1``).
    Sorted by size, each stride must step over everything the smaller ones reach: every
    layout made by slicing, transposing, reshaping or a change of memory order passes; a
    stride of 0, or an ``as_strided`` view whose elements meet or cannot be shown apart
    this way, does not.
    """
    if 0 in shape:
        return
    extent = itemsize
    for step, size in sorted(
        (abs(step), size) for size, step in zip(shape, strides, strict=True) if size > 1
    ):
        if step < extent:
            msg = (
                f"out has elements that share memory (shape {tuple(shape)}, strides "
                f"{tuple(strides)}: a stride of 0 as torch's expand or NumPy's broadcast_to "
                "make, or an as_strided view), so the result would depend on the order of "
                "the writes; pass a contiguous copy (np.ascontiguousarray(out), "
                "out.contiguous()) and use it"
            )
            raise ValueError(msg)
        extent += step * (size - 1)
