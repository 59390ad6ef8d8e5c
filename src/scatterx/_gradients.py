"""The gradients of contract.md section 9, written once for every array library.

Each rule is made of scatterx's own ``scatter_elements`` and ``gather_elements`` and of
array API operations (``Rules.xp``: ``array_api_compat``'s torch namespace, or
``jax.numpy``), so it runs on the arrays' own device and is deterministic wherever the
kernels are. Where the rules are themselves recorded (torch's ``create_graph=True``,
``jax.grad`` of a gradient), every step is differentiable: a second derivative works.

``mul`` needs, for each update, the product of the other factors of its target. Dividing
the target's product by the update fails at zeros, so the factors of each target are
brought together instead: updates that meet differ only in their axis coordinate, so a
stable sort of each column along the axis makes every target's factors one run, and a
segmented scan (doubling: ``log2(length)`` steps of whole-array products) gives each
factor the product of those before it and of those after it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from ._check import GATHER, GATHER_ND, SCATTER, SCATTER_ND, derive

Array = Any


class Calls(NamedTuple):
    """The scatter and gather of a gradient: made from the checked request of the call
    differentiated (``like``), checked by nothing again (:func:`scatterx._check.derive`),
    run by the host's ``run`` (which records or traces them in turn where the host does)
    with that call's choice of backend."""

    choice: Any
    like: Any
    run: Callable[[Any, Any], Array]

    def scatter(
        self, data: Array, indices: Array, updates: Array, *, axis: int, reduction: str
    ) -> Array:
        """scatter_elements of the gradient's arrays."""
        request = derive(SCATTER, self.like, (data, indices, updates), axis, reduction)
        return self.run(request, self.choice)

    def gather(self, data: Array, indices: Array, *, axis: int) -> Array:
        """gather_elements of the gradient's arrays."""
        return self.run(derive(GATHER, self.like, (data, indices), axis), self.choice)

    def scatter_nd(self, data: Array, indices: Array, updates: Array, *, reduction: str) -> Array:
        """scatter_nd of the gradient's arrays."""
        request = derive(SCATTER_ND, self.like, (data, indices, updates), None, reduction)
        return self.run(request, self.choice)

    def gather_nd(self, data: Array, indices: Array, *, batch_dims: int) -> Array:
        """gather_nd of the gradient's arrays."""
        return self.run(derive(GATHER_ND, self.like, (data, indices), batch_dims), self.choice)


class Rules(NamedTuple):
    """What the gradients are computed with, for one array library.

    Attributes
    ----------
    xp
        An array API namespace of the arrays.
    scatter, gather
        ``scatterx.scatter_elements`` and ``scatterx.gather_elements`` (the backend fixed,
        if any).
    conjugate
        Whether cotangents of complex products are conjugated (PyTorch: yes; JAX: no).
    device
        The ``device=`` for arrays made next to a given one (in a JAX trace: None).
    scatter_nd, gather_nd
        ``scatterx.scatter_nd`` and ``scatterx.gather_nd``, for the gradients of those.
    """

    xp: Any
    scatter: Callable[..., Array]
    gather: Callable[..., Array]
    conjugate: bool
    device: Callable[[Array], Any]
    scatter_nd: Callable[..., Array] | None = None
    gather_nd: Callable[..., Array] | None = None


def gather_vjp(rules: Rules, g: Array, shape: tuple[int, ...], indices: Array, axis: int) -> Array:
    """The gradient of ``data`` (of ``shape``) in ``gather_elements(data, indices, axis)``:
    each element of ``g`` added, in C order, to the element of ``data`` it was read from."""
    zeros = rules.xp.zeros(shape, dtype=g.dtype, device=rules.device(g))
    return rules.scatter(zeros, indices, g, axis=axis, reduction="add")


#: Which of (data, updates) need a gradient: the other is None, and not computed.
Wanted = tuple[bool, bool]
BOTH: Wanted = (True, True)


def scatter_vjp(
    rules: Rules,
    g: Array,
    data: Array,
    indices: Array,
    updates: Array,
    out: Array,
    axis: int,
    reduction: str,
    wanted: Wanted = BOTH,
) -> tuple[Array | None, Array | None]:
    """The gradients of ``data`` and ``updates`` given ``g``, the gradient of ``out``.

    ``data``, ``updates`` and ``out`` are read by ``mul``, ``max`` and ``min`` only.
    """
    if reduction == "add":
        d_updates = rules.gather(g, indices, axis=axis) if wanted[1] else None
        return (g if wanted[0] else None), d_updates
    if reduction == "none":
        return _none(rules, g, indices, axis, wanted)
    if reduction == "mul":
        return _mul(rules, g, data, indices, updates, axis, wanted)
    return _extremum(rules, g, (data, indices, updates, out), axis, wanted)


def _none(
    rules: Rules, g: Array, indices: Array, axis: int, wanted: Wanted
) -> tuple[Array | None, Array | None]:
    """``data`` keeps ``g`` where no update lands; the last update in C order (the one
    that wins) gets ``g`` of its target, and the updates it overwrote get 0."""
    xp = rules.xp
    device = rules.device(g)
    shape = tuple(indices.shape)
    # JAX without x64 has no int64: positions take the indices' dtype where it holds them.
    positions = xp.int64 if math.prod(shape) >= 2**31 else indices.dtype
    order = xp.reshape(xp.arange(math.prod(shape), dtype=positions, device=device), shape)
    unset = xp.full(g.shape, -1, dtype=positions, device=device)
    winner = rules.scatter(unset, indices, order, axis=axis, reduction="none")
    zero = xp.zeros((), dtype=g.dtype, device=device)
    d_data = xp.where(winner < 0, g, zero) if wanted[0] else None
    if not wanted[1]:
        return d_data, None
    won = rules.gather(winner, indices, axis=axis) == order
    return d_data, xp.where(won, rules.gather(g, indices, axis=axis), zero)


def gather_nd_vjp(
    rules: Rules, g: Array, shape: tuple[int, ...], indices: Array, batch_dims: int
) -> Array:
    """The gradient of ``data`` (of ``shape``) in ``gather_nd(data, indices, batch_dims)``:
    each element of ``g`` added, in C order, to the element it was read from."""
    zeros = rules.xp.zeros(shape, dtype=g.dtype, device=rules.device(g))
    folded = fold_batch(rules.xp, indices, batch_dims, rules.device(indices))
    return _nd(rules).scatter_nd(zeros, folded, g, reduction="add")


def fold_batch(xp: Any, indices: Array, batch: int, device: Any) -> Array:
    """``indices`` whose first ``batch`` dimensions pair with those of the data they
    index (GatherND's ``batch_dims``, vmap's batch), made rows of plain ScatterND or
    GatherND indices: each row gets its batch's position in front, one index per batch
    dimension, in the indices' dtype (a position is below a dimension's size)."""
    if not batch:
        return indices
    rows = tuple(indices.shape[:-1])
    columns = []
    for dim in range(batch):
        position = xp.arange(rows[dim], dtype=indices.dtype, device=device)
        placed = (*(1 for _ in rows[:dim]), rows[dim], *(1 for _ in rows[dim + 1 :]), 1)
        columns.append(xp.broadcast_to(xp.reshape(position, placed), (*rows, 1)))
    return xp.concat((*columns, indices), axis=-1)


def scatter_nd_vjp(
    rules: Rules, g: Array, indices: Array, reduction: str, wanted: Wanted = BOTH
) -> tuple[Array | None, Array | None]:
    """The gradients of ``data`` and ``updates`` of ``scatter_nd`` given ``g``, the
    gradient of its result: for ``add``, and for ``none`` as :func:`_none` gives them, a
    slice of ``updates`` per row of ``indices``."""
    nd = _nd(rules)
    if reduction == "add":
        d_updates = nd.gather_nd(g, indices, batch_dims=0) if wanted[1] else None
        return (g if wanted[0] else None), d_updates
    if reduction != "none":
        msg = (
            f"scatterx has no gradient of scatter_nd with reduction={reduction!r} (only "
            "'none' and 'add'): use scatter_elements, whose gradients cover every reduction"
        )
        raise NotImplementedError(msg)
    xp, device = rules.xp, rules.device(g)
    rows, depth = tuple(indices.shape[:-1]), int(indices.shape[-1])
    slices = (1,) * (g.ndim - depth)  # a row's mark, broadcast over its slice
    positions = xp.int64 if math.prod(rows) >= 2**31 else indices.dtype
    order = xp.reshape(xp.arange(math.prod(rows), dtype=positions, device=device), rows)
    unset = xp.full(tuple(g.shape[:depth]), -1, dtype=positions, device=device)
    winner = nd.scatter_nd(unset, indices, order, reduction="none")
    zero = xp.zeros((), dtype=g.dtype, device=device)
    unwritten = xp.reshape(winner < 0, (*winner.shape, *slices))
    d_data = xp.where(unwritten, g, zero) if wanted[0] else None
    if not wanted[1]:
        return d_data, None
    won = xp.reshape(nd.gather_nd(winner, indices, batch_dims=0) == order, (*rows, *slices))
    return d_data, xp.where(won, nd.gather_nd(g, indices, batch_dims=0), zero)


class _ND(NamedTuple):
    scatter_nd: Callable[..., Array]
    gather_nd: Callable[..., Array]


def _nd(rules: Rules) -> _ND:
    """The ND operations of ``rules`` (a host that serves the ND gradients gives both)."""
    if rules.scatter_nd is None or rules.gather_nd is None:
        msg = "these gradient rules have no scatter_nd and gather_nd"
        raise TypeError(msg)
    return _ND(rules.scatter_nd, rules.gather_nd)


def _extremum(
    rules: Rules, g: Array, call: tuple[Array, Array, Array, Array], axis: int, wanted: Wanted
) -> tuple[Array | None, Array | None]:
    """``g`` of each target shared equally by the values equal to the result there;
    ``call``: the call's data, indices and updates, and its result."""
    data, indices, updates, out = call
    xp = rules.xp
    data_ties = data == out
    update_ties = updates == rules.gather(out, indices, axis=axis)
    counts = rules.scatter(
        xp.astype(data_ties, xp.int32),
        indices,
        xp.astype(update_ties, xp.int32),
        axis=axis,
        reduction="add",
    )
    zero = xp.zeros((), dtype=g.dtype, device=rules.device(g))
    # Where nothing equals the result (a NaN), nothing gets a share: counts 0 -> 1 keeps
    # the division finite, and the masks give 0.
    share = g / xp.astype(xp.where(counts > 0, counts, 1), g.dtype)
    d_data = xp.where(data_ties, share, zero) if wanted[0] else None
    if not wanted[1]:
        return d_data, None
    return d_data, xp.where(update_ties, rules.gather(share, indices, axis=axis), zero)


def _mul(
    rules: Rules,
    g: Array,
    data: Array,
    indices: Array,
    updates: Array,
    axis: int,
    wanted: Wanted,
) -> tuple[Array | None, Array | None]:
    """Each factor gets ``g`` times the product of the other factors of its target."""
    d_data = d_updates = None
    if wanted[0]:
        ones = rules.xp.ones(data.shape, dtype=data.dtype, device=rules.device(data))
        products = rules.scatter(ones, indices, updates, axis=axis, reduction="mul")
        d_data = g * _conj(rules, products)
    if wanted[1]:
        others = _other_factors(rules, indices, updates, data.shape[axis], axis)
        others = others * rules.gather(data, indices, axis=axis)
        d_updates = rules.gather(g, indices, axis=axis) * _conj(rules, others)
    return d_data, d_updates


def _other_factors(rules: Rules, indices: Array, updates: Array, size: int, axis: int) -> Array:
    """For each update, the product of the other updates of its target (not ``data``)."""
    xp = rules.xp
    targets = xp.where(indices < 0, indices + size, indices)
    order = xp.argsort(targets, axis=axis, stable=True)
    runs = _front(xp, rules.gather(targets, order, axis=axis), axis)
    factors = _front(xp, rules.gather(updates, order, axis=axis), axis)
    before = _exclusive(xp, _scan(xp, factors, runs), runs)
    after = xp.flip(
        _exclusive(
            xp, _scan(xp, xp.flip(factors, axis=0), xp.flip(runs, axis=0)), xp.flip(runs, axis=0)
        ),
        axis=0,
    )
    others = _back(xp, before * after, axis)
    blank = xp.zeros(tuple(updates.shape), dtype=updates.dtype, device=rules.device(updates))
    return rules.scatter(blank, order, others, axis=axis, reduction="none")


def _scan(xp: Any, factors: Array, runs: Array) -> Array:
    """Inclusive products along the first axis, restarted where ``runs`` changes value.

    Runs are sorted, so two positions ``step`` apart in one run have only that run
    between them: each doubling step multiplies in the partial product ``step`` back.
    """
    step = 1
    while step < factors.shape[0]:
        same = runs[step:] == runs[:-step]
        later = xp.where(same, factors[step:] * factors[:-step], factors[step:])
        factors = xp.concat((factors[:step], later), axis=0)
        step *= 2
    return factors


def _exclusive(xp: Any, inclusive: Array, runs: Array) -> Array:
    """The products before each position in its run (1 at a run's start)."""
    one = xp.ones_like(inclusive[:1])
    if inclusive.shape[0] <= 1:
        return xp.broadcast_to(one, inclusive.shape)
    same = runs[1:] == runs[:-1]
    shifted = xp.where(same, inclusive[:-1], one)
    return xp.concat((one, shifted), axis=0)


def _front(xp: Any, array: Array, axis: int) -> Array:
    """``array`` with ``axis`` first. As ``permute_dims``: torch's ``moveaxis`` has no
    batching rule where ``torch.func.vmap`` batches ``jacrev``'s gradient."""
    axis %= array.ndim
    others = [d for d in range(array.ndim) if d != axis]
    return xp.permute_dims(array, (axis, *others))


def _back(xp: Any, array: Array, axis: int) -> Array:
    """``array`` with its first axis moved back to ``axis`` (undoes :func:`_front`)."""
    axis %= array.ndim
    return xp.permute_dims(array, (*range(1, axis + 1), 0, *range(axis + 1, array.ndim)))


def _conj(rules: Rules, array: Array) -> Array:
    xp = rules.xp
    if rules.conjugate and xp.isdtype(array.dtype, "complex floating"):
        return xp.conj(array)
    return array
