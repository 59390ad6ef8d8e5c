"""JAX's first use from eight threads at once (contract section 13), in a fresh process.

The first traced call on the CPU compiles the FFI target's handler and registers it with
XLA; each kind of first use below races eight threads into that, each with its own
``jax.jit`` (or ``jax.vmap``, or eager arrays), and every result must be the oracle's.
"""

from __future__ import annotations

import pytest

from _threads import first_use_in_threads

pytest.importorskip("jax")
pytest.importorskip("numba")

#: Every round: 64-bit JAX, so the cases' int64 and float64 arrays keep their dtypes.
_JAX = """
import jax, jax.numpy as jnp
import scatterx

jax.config.update("jax_enable_x64", True)


def jax_arrays(case):
    return [jnp.asarray(a) for a in (case.data, case.indices, case.updates)]
"""


def test_jit_scatter_first_used_from_threads() -> None:
    first_use_in_threads(
        _JAX
        + """
def first_use(thread, case):
    def scatter(d, i, u):
        return scatterx.scatter_elements(d, i, u, axis=case.axis, reduction=case.reduction)

    check(jax.jit(scatter)(*jax_arrays(case)), case.scattered)
"""
    )


def test_jit_gather_first_used_from_threads() -> None:
    first_use_in_threads(
        _JAX
        + """
def first_use(thread, case):
    def gather(d, i):
        return scatterx.gather_elements(d, i, axis=case.axis)

    data, indices, _ = jax_arrays(case)
    check(jax.jit(gather)(data, indices), case.gathered)
"""
    )


def test_vmap_and_eager_first_used_from_threads() -> None:
    """``jax.vmap`` without ``jax.jit`` runs the FFI target too; eager arrays beside it
    share the first look at JAX's array types."""
    first_use_in_threads(
        _JAX
        + """
def first_use(thread, case):
    data, indices, updates = jax_arrays(case)
    if thread % 2:
        got = scatterx.scatter_elements(
            data, indices, updates, axis=case.axis, reduction=case.reduction
        )
        check(got, case.scattered)
        check(scatterx.gather_elements(data, indices, axis=case.axis), case.gathered)
        return

    def scatter(d, i, u):
        return scatterx.scatter_elements(d, i, u, axis=case.axis, reduction=case.reduction)

    batch = [jnp.stack([a, a]) for a in (data, indices, updates)]
    got = jax.vmap(scatter)(*batch)
    check(got[0], case.scattered)
    check(got[1], case.scattered)
"""
    )
