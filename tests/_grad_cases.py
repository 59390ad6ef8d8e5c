"""Small float64 cases for the gradient tests: duplicates, ties, zeros (contract section 9)."""

from __future__ import annotations

import numpy as np

from scatterx_bench.base import BenchCase

REDUCTIONS = ("none", "add", "mul", "max", "min")
#: One scatter whose gradients are checked (name, data, indices, updates, axis): the
#: benchmark harness's case, defined once for its training cases and these.
GradCase = BenchCase


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def duplicates(axis: int = 0) -> GradCase:
    """Every target hit more than once along the axis; negative indices; indices shorter
    than data off the axis."""
    rng = _rng(1)
    data = rng.uniform(0.5, 1.5, (4, 5))
    indices = np.array([[1, 0, 3, -1], [1, 2, 3, 0], [-3, 0, 3, 3]])
    updates = rng.uniform(0.5, 1.5, (3, 4))
    if axis == 1:
        return GradCase("duplicates-axis1", data.T.copy(), indices.T.copy(), updates.T.copy(), 1)
    return GradCase("duplicates", data, indices, updates, 0)


def ties() -> GradCase:
    """max/min ties of two (an update and data, two updates): finite differences see the
    share of 1/2 there, as the rule gives it."""
    data = np.array([2.0, 1.0, 5.0, -1.0])
    indices = np.array([0, 0, 1, 1, 3, 2, 2])
    updates = np.array([2.0, 1.5, 0.25, 0.25, -1.0, 5.0, 4.0])
    return GradCase("ties", data, indices, updates, 0)


def zeros() -> GradCase:
    """mul with zeros: one zero at a target, two zeros at another, zero data at a third."""
    data = np.array([1.5, 2.0, 0.0, 3.0])
    indices = np.array([0, 0, 1, 1, 1, 2, 3, 3])
    updates = np.array([0.0, 2.0, 0.0, 0.0, 3.0, 4.0, 0.5, 1.25])
    return GradCase("zeros", data, indices, updates, 0)


def tie_free(seed: int = 3) -> GradCase:
    """Distinct random values, no zeros: every rule is defined and agrees with torch's."""
    rng = _rng(seed)
    data = rng.permutation(60).reshape(6, 10) / 7.0 + 0.5
    indices = rng.integers(-6, 6, (8, 10))
    updates = rng.permutation(np.arange(60, 140)).reshape(8, 10) / 7.0 + 0.5
    return GradCase("tie-free", data, indices, updates, 0)


def unique_targets() -> GradCase:
    """No two updates share a target: ``none`` agrees with ``torch.scatter``'s gradient."""
    rng = _rng(4)
    data = rng.normal(size=(5, 6))
    indices = np.stack([rng.permutation(5)[:3] for _ in range(6)], axis=1)
    updates = rng.normal(size=(3, 6))
    return GradCase("unique-targets", data, indices, updates, 0)


def gradcheck_cases() -> list[GradCase]:
    """The cases every reduction's gradient is checked on."""
    return [duplicates(), duplicates(axis=1), ties(), zeros()]
