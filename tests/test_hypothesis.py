"""Random calls: every available backend equals the oracle bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scatterx
from scatterx.testing import first_difference, reference_with_free_nans
from scatterx.testing._generated import dtypes, random_values

NUMERIC = [k for k, d in dtypes().items() if d.kind in "biufcV"]
AVAILABLE = [r.name for r in scatterx.backends() if r.available]


@st.composite
def calls(draw: st.DrawFn) -> dict[str, Any]:
    rank = draw(st.integers(1, 3))
    data_shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    index_shape = tuple(
        draw(st.integers(0, 9)) if d == axis % rank else draw(st.integers(0, n))
        for d, n in enumerate(data_shape)
    )
    key = draw(st.sampled_from(NUMERIC))
    reduction = draw(st.sampled_from(sorted(scatterx.DTYPE_REDUCTIONS[key])))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    size = data_shape[axis]
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    return {
        "data": random_values(rng, dtypes()[key], data_shape),
        "indices": rng.integers(-size, size, size=index_shape).astype(index_dtype),
        "updates": random_values(rng, dtypes()[key], index_shape),
        "axis": axis,
        "reduction": reduction,
    }


@pytest.mark.parametrize("backend", AVAILABLE)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=calls())
def test_random_calls_match_the_oracle(backend: str, call: dict[str, Any]) -> None:
    expected, free_nans = reference_with_free_nans(**call)
    try:
        out = scatterx.scatter_elements(
            call["data"],
            call["indices"],
            call["updates"],
            axis=call["axis"],
            reduction=call["reduction"],
            backend=backend,
        )
    except scatterx.BackendError:
        record = {r.name: r for r in scatterx.backends()}[backend]
        key = scatterx.dtype_key(call["data"].dtype)
        assert call["reduction"] not in record.capabilities.get(key or "", ())
        return
    problem = first_difference(out, expected, any_nan=free_nans)
    assert problem is None, problem
