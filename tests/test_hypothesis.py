"""Random calls: every available backend equals the oracle bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scatterx
from scatterx._registry import registered
from scatterx.backend import ConvertsArrays
from scatterx.testing import first_difference, reference_with_free_nans
from scatterx.testing._generated import dtypes, random_values

NUMERIC = [k for k, d in dtypes().items() if d.kind in "biufcV"]
AVAILABLE = [r.name for r in scatterx.backends() if r.available]
#: What a JIT backend draws by default: one dtype of each way the numba kernels store
#: values, int64 indices. Every other dtype and int32 indices compile signatures of their
#: own; the draws over all of them are marked slow (CI runs them).
QUICK = (["bool", "int32", "float16", "bfloat16", "float32", "complex64"], [np.int64])
FULL = (NUMERIC, [np.int32, np.int64])
ROLES = ("data", "indices", "updates")


@st.composite
def calls(draw: st.DrawFn, keys: list[str], index_dtypes: list[Any]) -> dict[str, Any]:
    rank = draw(st.integers(1, 3))
    data_shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    index_shape = tuple(
        draw(st.integers(0, 9)) if d == axis % rank else draw(st.integers(0, n))
        for d, n in enumerate(data_shape)
    )
    key = draw(st.sampled_from(keys))
    reduction = draw(st.sampled_from(sorted(scatterx.DTYPE_REDUCTIONS[key])))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    size = data_shape[axis]
    index_dtype = draw(st.sampled_from(index_dtypes))
    # Fortran order: the numba backend runs such data as its reordered, C-ordered view.
    order = draw(st.sampled_from(["C", "F"]))
    return {
        "data": random_values(rng, dtypes()[key], data_shape).copy(order=order),
        "indices": rng.integers(-size, size, size=index_shape).astype(index_dtype, order=order),
        "updates": random_values(rng, dtypes()[key], index_shape).copy(order=order),
        "axis": axis,
        "reduction": reduction,
        "out": draw(st.sampled_from(OUT_MODES)),
    }


#: Where the result goes: a new array, a separate ``out`` (filled with other values), or
#: ``data`` itself (in place).
OUT_MODES = ["new", "out", "in place"]
#: Backends whose arrays can be written into (Dask's cannot).
WRITABLE = {"numpy", "numba", "cupy"}


def _run(backend: str, arrays: list[Any], call: dict[str, Any], own: Any) -> Any:
    """The call of ``arrays`` on ``backend``, into the ``out`` its mode says."""
    mode = call["out"] if backend in WRITABLE else "new"
    out = None
    if mode == "in place":
        out = arrays[0]
    elif mode == "out":
        out = own.from_numpy(np.ones_like(call["data"]))
    result = scatterx.scatter_elements(
        *arrays, axis=call["axis"], reduction=call["reduction"], out=out, backend=backend
    )
    assert out is None or result is out
    return result


def _check(backend: str, call: dict[str, Any]) -> None:
    """The call on ``backend``'s own arrays (its ``from_numpy``: Dask's, CuPy's) against
    the oracle; an input its arrays cannot hold (StringDType for Dask) is passed over."""
    expected, free_nans = reference_with_free_nans(
        **{role: value for role, value in call.items() if role != "out"}
    )
    own = registered()[backend]
    assert isinstance(own, ConvertsArrays)
    try:
        arrays = [own.from_numpy(call[role].copy(order="K")) for role in ROLES]
    except TypeError:
        return
    try:
        out = _run(backend, arrays, call, own)
    except scatterx.BackendError:
        record = {r.name: r for r in scatterx.backends()}[backend]
        key = scatterx.dtype_key(call["data"].dtype)
        assert call["reduction"] not in record.capabilities.get(key or "", ())
        return
    problem = first_difference(own.to_numpy(out), expected, any_nan=free_nans)
    assert problem is None, problem


_settings = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# numba draws QUICK by default and FULL in the slow test below.
@pytest.mark.parametrize("backend", [name for name in AVAILABLE if name != "numba"])
@_settings
@given(call=calls(*FULL))
def test_random_calls_match_the_oracle(backend: str, call: dict[str, Any]) -> None:
    _check(backend, call)


@pytest.mark.skipif("numba" not in AVAILABLE, reason="numba is not available")
@_settings
@given(call=calls(*QUICK))
def test_random_calls_on_numba_match_the_oracle(call: dict[str, Any]) -> None:
    _check("numba", call)


@pytest.mark.slow
@pytest.mark.skipif("numba" not in AVAILABLE, reason="numba is not available")
@_settings
@given(call=calls(*FULL))
def test_random_calls_of_every_dtype_on_numba_match_the_oracle(call: dict[str, Any]) -> None:
    _check("numba", call)
