"""What users pass: NumPy's subclasses and scalars, masked arrays, strings, odd choices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import scatterx
from _subprocess import run_python
from scatterx._check import arguments as _rules
from scatterx.testing import assert_bitwise_equal, reference_scatter_elements

BACKENDS = [r.name for r in scatterx.backends() if r.available and r.name in ("numpy", "numba")]


def test_memmap_data_is_numpy(tmp_path: Path) -> None:
    path = tmp_path / "data.npy"
    np.save(path, np.arange(6, dtype=np.float32))
    data = np.load(path, mmap_mode="r")
    out = scatterx.scatter_elements(data, np.array([1, 1]), np.array([5, 6], np.float32))
    assert type(out) is np.ndarray
    assert out.tolist() == [0, 6, 2, 3, 4, 5]


def test_numpy_scalars_mixed_with_arrays_are_numpy() -> None:
    data = np.zeros(3)
    out = scatterx.scatter_elements(data, np.array([2]), np.array([4.0]))
    assert out.tolist() == [0, 0, 4]
    # A scalar among arrays is a 0-d array: the contract's rank error, not a library error.
    with pytest.raises(ValueError, match=r"rank of data.*indices shape \(\)"):
        scatterx.scatter_elements(data, np.int64(1), np.float64(2.0))


def test_numpy_scalar_data_gets_the_scalar_error() -> None:
    with pytest.raises(ValueError, match="scalars have no axis"):
        scatterx.scatter_elements(np.float32(1.0), np.int64(0), np.float32(2.0))


@pytest.mark.parametrize("role", ["data", "indices", "updates"])
def test_masked_arrays_are_refused_with_the_fix(role: str) -> None:
    arrays: dict[str, Any] = {
        "data": np.zeros(3),
        "indices": np.array([1]),
        "updates": np.array([2.0]),
    }
    arrays[role] = np.ma.array(arrays[role], mask=np.zeros(arrays[role].shape, bool))
    with pytest.raises(TypeError, match=rf"{role} is a numpy.ma.MaskedArray.*{role}\.filled"):
        scatterx.scatter_elements(arrays["data"], arrays["indices"], arrays["updates"])


def test_an_empty_index_list_gives_a_copy() -> None:
    data = np.arange(3, dtype=np.float32)
    out = scatterx.scatter_elements(data, [], [])
    assert_bitwise_equal(out, data)
    assert not np.shares_memory(out, data)


@pytest.mark.parametrize("choice", [5, 2.5, [5], ["numpy", 3], {"numpy"}])
def test_a_backend_choice_of_the_wrong_type_says_so(choice: Any) -> None:
    arrays = np.zeros(3), np.array([1]), np.array([2.0])
    wrong_type = r"a backend name or a sequence of names; got"
    with pytest.raises(TypeError, match=wrong_type):
        scatterx.scatter_elements(*arrays, backend=choice)
    with pytest.raises(TypeError, match=wrong_type), scatterx.use_backend(choice):
        pass
    with pytest.raises(TypeError, match=wrong_type):
        scatterx.set_backend(choice)


@pytest.mark.parametrize("value", ["", " ", ",", " , "])
def test_an_environment_value_naming_no_backend_is_automatic(
    monkeypatch: pytest.MonkeyPatch, clean_selection: None, value: str
) -> None:
    monkeypatch.setenv("SCATTERX_BACKEND", value)
    decision = scatterx.explain(np.zeros(3), np.array([1]), np.array([2.0]))
    assert decision.source == "automatic priority"


def test_the_dtype_checks_remember_a_bounded_number_of_combinations() -> None:
    indices = np.array([0])
    for width in range(1, 2000):
        text = np.array(["a"], dtype=f"U{width}")
        scatterx.scatter_elements(text, indices, text)
    info = _rules.dtype_key_of_call.cache_info()
    assert info.maxsize is not None
    assert info.currsize <= info.maxsize


# A separate process: the failure this guards against was a segfault.
LONG_STRINGS = """
import numpy as np, scatterx
T = np.dtypes.StringDType()
for dtype in (T, np.dtypes.StringDType(na_object=None)):
    data, updates = np.array(["x", "y"], dtype), np.array(["a" * 16, "b" * 40], dtype)
    for reduction in ("none", "add", "max", "min"):
        out = scatterx.scatter_elements(data, np.array([0, 0]), updates, reduction=reduction)
        print(reduction, out.tolist(), out.dtype == dtype)
"""


def test_long_stringdtype_updates_do_not_crash() -> None:
    stdout = run_python(LONG_STRINGS, timeout=120)
    a, b = "a" * 16, "b" * 40
    expected = [
        f"none ['{b}', 'y'] True",
        f"add ['x{a}{b}', 'y'] True",
        "max ['x', 'y'] True",
        f"min ['{a}', 'y'] True",
    ]
    assert stdout.splitlines() == expected * 2


@pytest.mark.parametrize("reduction", ["max", "min"])
def test_strings_with_nul_characters_compare_by_code_point(reduction: str) -> None:
    # NumPy's StringDType loops order "a\0\0" above "a\0b"; code points do not.
    words = ["a\0\0", "a\0b", "a", "a\0", "\0", ""]
    others = ["a\0b", "a\0\0", "a\0", "a", "", "\0"]
    for dtype in (np.dtypes.StringDType(), object):
        data = np.array(words, dtype=dtype)
        updates = np.array(others, dtype=dtype)
        out = scatterx.scatter_elements(data, np.arange(6), updates, reduction=reduction)
        pick = max if reduction == "max" else min
        assert out.tolist() == [pick(a, b) for a, b in zip(words, others, strict=True)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_bool_bytes_other_than_one_read_as_true(backend: str) -> None:
    data = np.array([2, 0, 255], np.uint8).view(bool)
    updates = np.array([0, 7], np.uint8).view(bool)
    out = scatterx.scatter_elements(data, np.array([1, 1]), updates, backend=backend)
    assert out.view(np.uint8).tolist() == [1, 1, 1]
    expected = reference_scatter_elements(data, np.array([1, 1]), updates)
    assert_bitwise_equal(out, expected)
