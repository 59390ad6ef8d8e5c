"""``out=data`` on NumPy arrays: checked by the metadata the call's other checks remember and
by a glance at its memory, with every refusal of contract section 7 kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx import _check as _validate
from scatterx._check import out as _validate_out


def _arrays(rows: int = 5) -> tuple[Any, Any, Any]:
    data = np.zeros((rows, 7), np.float32)
    indices = np.array([[0, 1, 2, 3, 4, 0, 1]] * 2, np.int64) % rows
    return data, indices, np.ones((2, 7), np.float32)


def _counted(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, counts: list[str]) -> None:
    original: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_repeated_update_in_place_skips_the_full_out_checks(
    monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    """A C- or F-contiguous ``data`` needs no proof from its strides that its elements
    are apart (contract section 7): the glance at its flags is the whole check."""
    data, indices, updates = _arrays()
    data = np.asarray(data, order=order)
    scatterx.scatter_elements(data, indices, updates, reduction="add", out=data)  # remembered
    counts: list[str] = []
    _counted(monkeypatch, _validate, "check_out", counts)
    _counted(monkeypatch, _validate_out, "_overlap", counts)
    _counted(monkeypatch, _validate_out, "refuse_self_overlap", counts)
    for _ in range(3):
        got = scatterx.scatter_elements(data, indices, updates, reduction="add", out=data)
        assert got is data
    assert counts == []
    assert data[0, 0] == 4 * 2  # each call adds twice at (0, 0) (rows 0 and 1 of indices)


def test_a_read_only_data_is_refused_after_calls_that_wrote_it() -> None:
    data, indices, updates = _arrays()
    scatterx.scatter_elements(data, indices, updates, out=data)
    data.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        scatterx.scatter_elements(data, indices, updates, out=data)


def test_updates_or_indices_in_data_are_refused_with_the_shapes_of_a_good_call() -> None:
    data, indices, updates = _arrays()
    scatterx.scatter_elements(data, indices, updates, out=data)
    inside = data[1:3]  # the shape and strides of updates, in data's memory
    with pytest.raises(ValueError, match="out overlaps updates"):
        scatterx.scatter_elements(data, indices, inside, out=data)
    wide = np.zeros((5, 7))
    scatterx.scatter_elements(wide, indices, updates.astype(wide.dtype), out=wide)
    raw = wide.view(np.int64)[:2] % 5  # a copy: no overlap
    scatterx.scatter_elements(wide, raw, updates.astype(wide.dtype), out=wide)
    with pytest.raises(ValueError, match="out overlaps indices"):
        scatterx.scatter_elements(wide, wide.view(np.int64)[:2], wide[3:], out=wide)


def test_data_sharing_bounds_but_no_element_with_updates_is_updated() -> None:
    """Interleaved columns of one buffer: NumPy's bounds test says they may share memory,
    the full check finds no shared element, and the call runs."""
    both = np.zeros((5, 14), np.float32)
    data, updates = both[:, ::2], both[:2, 1::2]
    updates[...] = 1
    indices = _arrays()[1]
    expected = scatterx.scatter_elements(data, indices, updates, reduction="add")
    got = scatterx.scatter_elements(data, indices, updates, reduction="add", out=data)
    assert got is data
    np.testing.assert_array_equal(data, expected)
