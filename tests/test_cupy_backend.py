"""The cupy backend without a GPU: light import, reasons, capabilities, geometry, strategy.

Also the opt-in fast paths: their switch, their rule and what each refuses to compute; and
the gather's host side: its kernels, and the dims its kernel walks.
"""

from __future__ import annotations

import doctest
import importlib.util
import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import scatterx
import scatterx_cupy
from scatterx_cupy import CupyBackend, _compile, _fast, _gather, _layout, _run


def test_importing_the_backend_does_not_import_cupy() -> None:
    code = (
        "import sys, scatterx, scatterx_cupy\n"
        "scatterx_cupy.backend.version\n"
        "import numpy as np\n"
        "scatterx.scatter_elements(np.zeros(3), np.array([1]), np.array([2.0]))\n"
        "scatterx.gather_elements(np.zeros(3), np.array([1]))\n"
        "assert 'cupy' not in sys.modules, 'cupy was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_reason_when_cupy_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real(name, *a)
    )
    assert CupyBackend().available() == "cupy is not installed (pip install 'scatterx[cupy]')"


def _has_device() -> bool:
    return CupyBackend().available() is None


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="cupy is not installed")
def test_reason_names_the_device_when_cupy_sees_none() -> None:
    reason = CupyBackend().available()
    if reason is None:
        pytest.skip("a CUDA device is present")
    assert "device" in reason


def test_registered_and_listed_with_its_reason() -> None:
    record = {b.name: b for b in scatterx.backends()}["cupy"]
    assert record.array_types == ("cupy:ndarray",)
    assert record.available is (record.reason is None)
    assert set(record.dtypes) <= set(scatterx.DTYPE_KEYS)


def test_capabilities_are_the_contracts_for_every_dtype_served() -> None:
    backend = CupyBackend()
    for key, reductions in backend.capabilities.items():
        assert reductions == scatterx.DTYPE_REDUCTIONS[key]
    assert "bfloat16" not in backend.capabilities
    assert "StringDType" not in backend.capabilities


def _request(data: Any, indices: Any, updates: Any, axis: int = 0, reduction: str = "none") -> Any:
    from scatterx._check import normalise

    return normalise(data, indices, updates, axis, reduction)


@pytest.mark.parametrize(
    ("dtype", "word"),
    [("bfloat16", "bfloat16"), ("StringDType", "strings"), ("U3", "strings")],
)
def test_can_run_declines_with_a_reason(dtype: str, word: str) -> None:
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        data = np.zeros(3, dtype=ml_dtypes.bfloat16)
    elif dtype == "StringDType":
        data = np.array(["a", "b", "c"], dtype=np.dtypes.StringDType())
    else:
        data = np.array(["a", "b", "c"], dtype=dtype)
    reason = CupyBackend().can_run(_request(data, np.array([1]), data[:1]))
    assert reason is not None
    assert word in reason


def test_can_run_accepts_every_served_dtype_and_reduction() -> None:
    backend = CupyBackend()
    for key, reductions in backend.capabilities.items():
        data = np.zeros(3, dtype=key)
        for reduction in reductions:
            assert backend.can_run(_request(data, np.array([1]), data[:1], 0, reduction)) is None


@pytest.mark.parametrize("dtype", [">f4", "<U2", "O"])
def test_from_numpy_refuses_what_cupy_cannot_hold(dtype: str) -> None:
    with pytest.raises(TypeError, match="cupy"):
        CupyBackend().from_numpy(np.zeros(2, dtype=dtype))


def test_every_served_pair_has_kernels() -> None:
    for key, reductions in _compile.SERVED.items():
        names = _compile.name_expressions(key)
        fast = _compile.name_expressions(key, fast=True)
        assert not set(names) & set(fast)
        for reduction, index in itertools.product(reductions, _compile.INDEX_TYPES):
            assert _compile.columns_name(key, index, reduction) in names
            for key_type in _compile.KEY_TYPES:
                assert _compile.runs_name(key, key_type, reduction) in names
            if _compile.uses_atomics(key, reduction):
                assert _compile.atomics_name(key, index, reduction) in names
                continue
            assert _compile.warps_name(key, index, reduction) in fast
            for key_type in _compile.KEY_TYPES:
                assert _compile.row_runs_name(key, key_type, reduction) in fast
            if reduction == "none":
                assert _compile.put_last_name(key, index) in fast
            elif _compile.uses_winners(key, reduction):
                assert set(_compile.best_names(key, index, reduction)) <= set(fast)
    shared = _compile.target_expressions(fast=True)
    for index in _compile.INDEX_TYPES:
        assert _compile.win_last_name(index) in shared
        for key_type in _compile.KEY_TYPES:
            assert _compile.row_keys_name(index, key_type) in shared


def test_kernel_source_ships_with_the_package() -> None:
    shipped = sorted(path.name for path in Path(_compile.__file__).parent.glob("*.cu"))
    assert shipped == sorted((_compile.SOURCE, _compile.FAST_SOURCE, _compile.GATHER_SOURCE))
    assert "scx_gather" in _compile.gather_source()
    assert "scx_gather" not in _compile.source(fast=True)  # a module of its own
    assert "scx_columns" in _compile.source()
    assert "scx_warps" not in _compile.source()  # the default modules: today's kernels only
    assert _compile.source(fast=True).startswith(_compile.source())
    assert "scx_warps" in _compile.source(fast=True)


def test_atomics_only_where_order_cannot_matter() -> None:
    assert _compile.uses_atomics("int32", "add")
    assert _compile.uses_atomics("bool", "mul")
    assert not _compile.uses_atomics("int32", "none")
    for key in ("float16", "float32", "float64", "complex64", "complex128"):
        assert not any(_compile.uses_atomics(key, r) for r in scatterx.REDUCTIONS)


def test_default_nan_is_this_cpus() -> None:
    nan32, nan64 = _compile.default_nan_defines()
    with np.errstate(invalid="ignore"):
        inf = np.array([np.inf], dtype=np.float32)
        expected = int((inf - inf).view(np.uint32)[0])
    assert nan32 == f"-DSCX_DNAN32={expected:#x}u"
    assert nan64.startswith("-DSCX_DNAN64=0x")


SHAPES = [
    ((5,), (7,), 0),
    ((4, 6), (3, 6), 0),
    ((4, 6), (4, 2), 1),
    ((3, 4, 5), (2, 4, 5), 1),
    ((3, 4, 5), (3, 2, 5), 2),
    ((3, 4, 5), (3, 4, 5), 1),
    ((2, 3, 4, 5), (2, 1, 4, 3), 0),
    ((2, 3, 4, 5), (1, 3, 2, 5), 2),
    ((6, 1, 5, 2), (6, 1, 3, 2), 2),
    ((3, 5, 4, 2), (3, 1, 4, 2), 3),
]


@pytest.mark.parametrize(("data_shape", "index_shape", "axis"), SHAPES)
def test_layout_targets_match_the_contracts_positions(
    data_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int
) -> None:
    rng = np.random.default_rng(7)
    size = data_shape[axis]
    indices = rng.integers(-size, size, index_shape)
    grid = list(np.indices(index_shape))
    grid[axis] = indices % size
    expected = np.ravel_multi_index(tuple(grid), data_shape).reshape(-1)
    lay = _layout.layout(data_shape, index_shape, axis)
    assert lay.n_cols * lay.axis_len == indices.size
    actual = []
    for flat, value in enumerate(indices.reshape(-1)):
        rest, n = divmod(flat, lay.n_inner)
        o, k = divmod(rest, lay.axis_len)
        actual.append(_layout.targets(lay, (o, k, n), int(value) % size))
    np.testing.assert_array_equal(np.array(actual), expected)


def test_layout_merges_full_dims_into_one() -> None:
    lay = _layout.layout((2, 3, 4, 5), (2, 3, 4, 5), 0)
    assert lay.inner == ((60, 1),)
    assert lay.geometry() == (0, 1, 60, 1)


def test_layout_does_not_merge_across_a_skipped_dim() -> None:
    lay = _layout.layout((2, 3, 4, 5), (2, 1, 4, 5), 3)
    assert lay.outer == ((2, 60), (4, 5))


#: geometry -> (dtype, reduction, strategy by default, strategy with the fast paths) calls
RULE = {
    ((4096, 4096), (4096, 4096), 0): [
        ("float32", "add", "sort", "rows"),
        ("float32", "max", "sort", "winner"),
        ("float64", "max", "sort", "rows"),
    ],
    ((16384, 16384), (16384, 16384), 0): [("float32", "none", "columns", "winner")],
    ((16384, 16384), (16384, 16384), 1): [("float32", "none", "columns", "warps")],
    ((65536,), (4194304,), 0): [
        ("float32", "add", "sort", "sort"),
        ("float16", "min", "sort", "winner"),
        ("int64", "add", "atomics", "atomics"),
        ("int64", "none", "sort", "winner"),
    ],
    ((30000, 256), (16384, 256), 0): [
        ("float32", "max", "sort", "winner"),
        ("complex64", "add", "sort", "rows"),
    ],
    ((8192, 1024), (8192, 64), 1): [
        ("float32", "none", "columns", "warps"),
        ("float32", "add", "columns", "warps"),
    ],
    ((8192, 1024), (8192, 8), 1): [("float32", "add", "columns", "columns")],
    ((65536,), (100,), 0): [("float64", "mul", "columns", "columns")],
    ((2**26,), (100,), 0): [("float32", "none", "columns", "columns")],
}


@pytest.mark.parametrize("geometry", RULE)
def test_strategy_rule(monkeypatch: pytest.MonkeyPatch, geometry: Any) -> None:
    """Without the opt-in, the rule verified on GPUs; with it, the fast paths where they fit."""
    monkeypatch.delenv(_fast.ENV_VAR, raising=False)
    shape, index_shape, axis = geometry
    lay = _layout.layout(shape, index_shape, axis)
    size = int(np.prod(shape))
    for key, reduction, default, fast in RULE[geometry]:
        assert _run.strategy(lay, key, reduction) == default, (key, reduction)
        assert _run.strategy(lay, key, reduction, size) == default, (key, reduction)
        assert _run.strategy(lay, key, reduction, size, fast=True) == fast, (key, reduction)


@pytest.mark.parametrize(
    ("chosen", "key", "reduction", "index_shape", "axis"),
    [
        ("atomics", "float32", "add", (4, 6), 0),
        ("warps", "float32", "add", (4, 6), 0),
        ("warps", "int32", "add", (4, 6), 1),
        ("winner", "float64", "max", (4, 6), 0),
        ("winner", "float32", "add", (4, 6), 0),
        ("rows", "int8", "mul", (4, 6), 0),
    ],
)
def test_forced_strategies_refuse_what_they_cannot_compute_exactly(
    chosen: str, key: str, reduction: str, index_shape: tuple[int, ...], axis: int
) -> None:
    """Refused before anything reaches the device: cupy is not needed to see it."""
    data = np.zeros((4, 6), dtype=key)
    indices = np.zeros(index_shape, dtype=np.int64)
    request = _request(data, indices, np.zeros(index_shape, dtype=key), axis, reduction)
    request = request._replace(data=_NoDevice(data))
    with pytest.raises(ValueError, match=r"cannot run|would change"):
        _run.scatter_elements(request, force=chosen)
    lay = _layout.layout((4, 6), index_shape, axis)
    for fine in ("columns", "sort"):
        assert _fast.refusal(fine, lay, key, reduction) is None


class _NoDevice:
    """Just enough of a cupy array to reach the strategy checks of ``_run``."""

    def __init__(self, array: np.ndarray[Any, Any]) -> None:
        self.array, self.dtype, self.shape = array, array.dtype, array.shape
        self.device = self

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

    def copy(self, order: str) -> np.ndarray[Any, Any]:
        return self.array.copy(order=order)


@pytest.fixture
def fast_paths_unset(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv(_fast.ENV_VAR, raising=False)
    scatterx_cupy.set_fast_paths(None)
    yield
    scatterx_cupy.set_fast_paths(None)


@pytest.mark.usefixtures("fast_paths_unset")
def test_fast_paths_are_off_by_default() -> None:
    assert scatterx_cupy.fast_paths_enabled() is False
    lay = _layout.layout((16384, 16384), (16384, 16384), 1)
    assert _run.strategy(lay, "float32", "none") == "columns"


@pytest.mark.usefixtures("fast_paths_unset")
@pytest.mark.parametrize(
    ("value", "enabled"), [("1", True), ("on", True), ("TRUE", True), ("0", False), ("", False)]
)
def test_the_env_var_turns_them_on(
    monkeypatch: pytest.MonkeyPatch, value: str, enabled: bool
) -> None:
    monkeypatch.setenv(_fast.ENV_VAR, value)
    assert scatterx_cupy.fast_paths_enabled() is enabled
    lay = _layout.layout((16384, 16384), (16384, 16384), 1)
    assert _run.strategy(lay, "float32", "none") == ("warps" if enabled else "columns")


@pytest.mark.usefixtures("fast_paths_unset")
def test_a_typo_in_the_env_var_raises_rather_than_running_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(_fast.ENV_VAR, "ture")
    with pytest.raises(ValueError, match=f"{_fast.ENV_VAR} must be 1 .* got 'ture'"):
        scatterx_cupy.fast_paths_enabled()


@pytest.mark.usefixtures("fast_paths_unset")
def test_set_fast_paths_overrides_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_fast.ENV_VAR, "1")
    scatterx_cupy.set_fast_paths(False)
    assert scatterx_cupy.fast_paths_enabled() is False
    monkeypatch.setenv(_fast.ENV_VAR, "0")
    scatterx_cupy.set_fast_paths(True)
    assert scatterx_cupy.fast_paths_enabled() is True
    scatterx_cupy.set_fast_paths(None)
    assert scatterx_cupy.fast_paths_enabled() is False


@pytest.mark.usefixtures("fast_paths_unset")
def test_fast_path_docstring_examples_run() -> None:
    result = doctest.testmod(_fast, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_can_run_accepts_a_gather_of_every_served_dtype() -> None:
    from scatterx._check import normalise_gather

    backend = CupyBackend()
    for key in backend.capabilities:
        assert backend.can_run(normalise_gather(np.zeros(3, dtype=key), np.array([1]), 0)) is None
    strings = normalise_gather(np.array(["a", "b"]), np.array([1]), 0)
    assert "strings" in str(backend.can_run(strings))


def test_every_served_dtype_has_a_gather_kernel() -> None:
    names = _compile.expressions(_compile.GATHER)
    for key, index in itertools.product(_compile.SERVED, _compile.INDEX_TYPES):
        itemsize = np.dtype(key).itemsize
        assert _compile.gather_name(itemsize, index, key == "bool") in names
    assert len(set(names)) == len(names) == 2 * (len(_compile.BITS_TYPES) + 1)


#: (data shape, index shape, axis, data view, index view): slices of C-ordered arrays.
GATHER_VIEWS = [
    ((5,), (7,), 0, np.s_[:], np.s_[:]),
    ((4, 6), (3, 6), 0, np.s_[::-1, :], np.s_[:, ::-1]),
    ((3, 4, 5), (3, 2, 5), 1, np.s_[:, ::2, 1:], np.s_[::-1, ::3, :]),
    ((2, 3, 4, 5), (2, 3, 4, 5), 3, np.s_[:], np.s_[:]),
    ((6, 1, 5, 2), (6, 1, 3, 2), 2, np.s_[::2, :, ::-1, :], np.s_[:, :, 1:, :]),
    ((3, 5, 4, 2), (3, 1, 4, 2), 0, np.s_[:, ::-2], np.s_[::-1]),
]


def _viewed(values: np.ndarray[Any, Any], view: Any, shape: tuple[int, ...]) -> Any:
    """The first ``shape`` elements of ``values[view]``: ``values`` is four times as long on
    every dim, so that steps up to 3 leave enough."""
    return values[view][tuple(slice(0, n) for n in shape)]


def _read(first: np.ndarray[Any, Any], offset: int) -> Any:
    """The element ``offset`` elements (of either sign) from ``first``'s first element."""
    return np.lib.stride_tricks.as_strided(first, (2,), (offset * first.itemsize,))[1]


@pytest.mark.parametrize(
    ("data_shape", "index_shape", "axis", "data_view", "index_view"), GATHER_VIEWS
)
def test_gather_dims_find_numpys_elements(
    data_shape: tuple[int, ...],
    index_shape: tuple[int, ...],
    axis: int,
    data_view: Any,
    index_view: Any,
) -> None:
    """Offsets of ``_gather.offsets`` in the views' own memory, against NumPy's indexing."""
    big = tuple(4 * n for n in data_shape)
    data = _viewed(np.arange(np.prod(big)).reshape(big), data_view, data_shape)
    size = data_shape[axis]
    rng = np.random.default_rng(5)
    indices = _viewed(
        rng.integers(-size, size, tuple(4 * n for n in index_shape)), index_view, index_shape
    )
    (_, data_strides), (_, index_strides) = map(_gather.element_strides, (data, indices))
    dims = _gather.merged_dims(index_shape, index_strides, data_strides, axis)
    assert all(length > 1 for length, _, _ in dims)
    # take_along_axis broadcasts: give it data cut to the index shape off the axis.
    cut = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(index_shape))
    expected = np.take_along_axis(data[cut], indices % size, axis).reshape(-1)
    for flat, want in enumerate(expected):
        at_index, at_data = _gather.offsets(dims, flat)
        j = int(_read(indices, at_index)) % size
        assert _read(data, at_data + j * data_strides[axis]) == want


def test_gather_dims_merge_what_both_arrays_continue() -> None:
    dims = _gather.merged_dims((2, 3, 4, 5), (60, 20, 5, 1), (60, 20, 5, 1), 0)
    assert dims == ((2, 60, 0), (60, 1, 1))
    assert _gather.geometry(dims) == (2, 2, 60, 0, 60, 1, 1)
    broadcast = _gather.merged_dims((7, 8), (8, 1), (1, 0), 0)  # data broadcast along dim 1
    assert broadcast == ((56, 1, 0),)
