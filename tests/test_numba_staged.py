"""An update in place on small data runs as a new result copied back (scatterx_numba._run).

Where data is at most a quarter of the indices' bytes, ``out=data`` is computed into a new
array, checked inside the kernels, then copied into data: these check that the bits, the
returned object and the contract's error (data untouched) are those of the direct path.
"""

from __future__ import annotations

import numpy as np
import pytest

import scatterx

numba = pytest.importorskip("numba", reason="numba is not installed (the numba extra)")
from scatterx_numba import _run  # noqa: E402 (after the skip)


def _arrays(size: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    data = rng.random(size, dtype=np.float32)
    indices = rng.integers(-size, size, n, dtype=np.int64)
    return data, indices, rng.random(n, dtype=np.float32)


@pytest.mark.parametrize("reduction", scatterx.REDUCTIONS)
def test_small_data_in_place_is_staged_with_the_same_bits(reduction: str) -> None:
    data, indices, updates = _arrays(64, 4096)
    assert data.nbytes <= _run.STAGE_FRACTION * indices.nbytes  # the staged path
    expected = scatterx.scatter_elements(
        data, indices, updates, axis=0, reduction=reduction, backend="numpy"
    )
    got = scatterx.scatter_elements(
        data, indices, updates, axis=0, reduction=reduction, backend="numba", out=data
    )
    assert got is data
    np.testing.assert_array_equal(data.view(np.uint32), expected.view(np.uint32))


def test_a_bad_index_leaves_staged_data_untouched() -> None:
    data, indices, updates = _arrays(64, 4096)
    indices[100], indices[3000] = 64, -65
    before = data.copy()
    with pytest.raises(IndexError) as info:
        scatterx.scatter_elements(
            data, indices, updates, axis=0, reduction="add", backend="numba", out=data
        )
    assert str(info.value) == str(scatterx.backend.out_of_bounds_error(64, (100,), 0, 64))
    np.testing.assert_array_equal(data, before)


def test_only_small_data_in_place_is_staged(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    staged = _run._staged
    monkeypatch.setattr(_run, "_staged", lambda request: seen.append(staged(request)) or seen[-1])
    for size, n in ((4096, 64), (64, 4096)):
        data, indices, updates = _arrays(size, n)
        scatterx.scatter_elements(data, indices, updates, axis=0, backend="numba", out=data)
        scatterx.scatter_elements(data, indices, updates, axis=0, backend="numba")  # new
    # large data in place, a new result, small data in place, its new staged call, a new result
    assert seen == [False, False, True, False, False]
