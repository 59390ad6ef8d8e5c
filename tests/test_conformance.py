"""Every registered backend against the oracle on every conformance case, on its own arrays
and through every array library; and the runner's checks, each shown able to fail."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, cast

import numpy as np
import pytest

import scatterx
from _backends import Result, UnavailableBackend, WrongBackend
from scatterx.testing import (
    LIBRARIES,
    Case,
    ConformanceCase,
    _libraries,
    all_cases,
    gather_cases,
    gather_onnx_node_cases,
    run_case,
    scoped_registry,
    spec_cases,
)
from scatterx.testing.conformance import (
    COVER_FAMILIES,
    _chosen_libraries,
    _columns,
    _missing_id,
    _param,
    in_default_run,
    pytest_generate_tests,
    test_backend_matches_oracle,
    test_missing_column_is_said,
)
from scatterx.testing.plugin import skip_or_fail_library

__all__ = ["pytest_generate_tests", "test_backend_matches_oracle", "test_missing_column_is_said"]

SPEC = spec_cases()[0]  # float32, reduction none
GATHER = gather_onnx_node_cases()[0]  # float32, axis 1


class WrongGatherer(WrongBackend):
    """A WrongBackend that gathers too: ``dtypes`` only, numpy's answer, then wrong."""

    def __init__(self, name: str, wrong: Result, dtypes: tuple[str, ...] = ("float32",)) -> None:
        super().__init__(name, wrong)
        self.dtypes = dtypes
        self.capabilities = {key: frozenset({"none"}) for key in dtypes}

    def can_run(self, request: scatterx.backend.Request) -> str | None:
        if isinstance(request, scatterx.backend.GatherRequest):
            return None if request.dtype_key in self.dtypes else "not that dtype"
        return super().can_run(request)

    def gather_elements(self, request: scatterx.backend.GatherRequest) -> Any:
        data, indices = (np.asarray(a) for a in request.arrays)
        answer = scatterx.gather_elements(data, indices, axis=request.axis, backend="numpy")
        return self.wrong(answer, request)


def _run_wrong(wrong: WrongBackend, library: str | None, case: ConformanceCase = SPEC) -> Any:
    with scoped_registry(wrong):
        return run_case(wrong.name, case, library=library)


def _installed(name: str) -> str:
    """``name``, or skip the test when the library is not installed; JAX with x64 on."""
    reason = _libraries.library(name).available()
    if reason is not None:
        pytest.skip(reason)
    if name == "jax":
        _libraries.enable_jax_x64()  # as the matrix runs it (the test process has it on)
    return name


@pytest.fixture(params=LIBRARIES)
def array_library(request: pytest.FixtureRequest) -> str:
    """Each array library of the matrix that is installed here."""
    return _installed(request.param)


@pytest.fixture
def fresh_availability() -> Iterator[None]:
    """The adapters' cached availability forgotten before and after the test."""
    _libraries._availability.cache_clear()
    yield
    _libraries._availability.cache_clear()


def test_a_right_backend_passes_through_each_library(array_library: str) -> None:
    right = WrongBackend("right", lambda answer, request: answer)
    outcome = _run_wrong(right, array_library)
    assert (outcome.status, outcome.detail) == ("passed", "")


def test_a_numpy_result_for_torch_input_fails_the_library_check() -> None:
    _installed("torch")
    # Serving torch tensors natively, so the front-end returns what it returns, unconverted.
    lazy = WrongBackend(
        "numpy-for-torch", lambda answer, request: answer, ("numpy:ndarray", "torch:Tensor")
    )
    assert _run_wrong(lazy, None).status == "passed"  # right on its NumPy arrays
    outcome = _run_wrong(lazy, "torch")
    assert outcome.status == "failed"
    assert outcome.detail == "returned numpy.ndarray, not torch.Tensor"


@pytest.mark.parametrize(
    ("library", "detail"),
    [
        ("torch", "returned dtype torch.float64, data has torch.float32"),
        ("jax", "returned dtype float64, data has float32"),
        ("array_api_strict", "returned dtype array_api_strict.float64, data has "),
    ],
)
def test_a_result_of_another_dtype_fails_the_library_check(library: str, detail: str) -> None:
    _installed(library)
    widened = WrongBackend("widened", lambda answer, request: answer.astype(np.float64))
    outcome = _run_wrong(widened, library)
    assert outcome.status == "failed"
    assert outcome.detail.startswith(detail)


def test_a_result_on_another_device_fails_the_library_check() -> None:
    torch = pytest.importorskip("torch")
    adapter = _libraries.library("torch")
    like = torch.zeros(2, device="cpu")
    on_meta = torch.zeros(2, device="meta")  # a device any torch build has
    assert adapter.check_result(on_meta, like) == "returned an array on meta, data is on cpu"
    assert adapter.check_result(like.clone(), like) is None


def test_wrong_values_through_a_library_fail(array_library: str) -> None:
    off = WrongBackend("off-by-one", lambda answer, request: answer + np.float32(1))
    outcome = _run_wrong(off, array_library)
    assert outcome.status == "failed"
    assert "9 of 9 elements differ" in outcome.detail


def _write_data(answer: Any, request: scatterx.backend.Request) -> Any:
    """Write the answer into ``data`` (a view of the caller's memory, carried by DLPack)."""
    np.copyto(request.data, answer)
    return answer.copy()


@pytest.mark.parametrize("library", ["torch", "array_api_strict"])
def test_a_backend_writing_its_input_fails_through_a_library(library: str) -> None:
    _installed(library)
    outcome = _run_wrong(WrongBackend("writer", _write_data), library)
    assert outcome.status == "failed"
    assert outcome.detail.startswith("data was modified: ")


def test_a_backend_writing_jax_memory_fails() -> None:
    _installed("jax")
    outcome = _run_wrong(WrongBackend("writer", _write_data), "jax")
    assert outcome.status == "failed"  # JAX's memory reaches the backend read-only
    assert "read-only" in outcome.detail


def test_an_error_case_through_a_library_needs_the_same_error(array_library: str) -> None:
    case = next(c for c in all_cases() if c.name == "error-axis-float")
    assert run_case("numpy", case, library=array_library).status == "passed"
    wrong_match = dataclasses.replace(case, match="a message numpy does not give")
    outcome = run_case("numpy", wrong_match, library=array_library)
    assert outcome.status == "failed"
    assert "does not match" in outcome.detail


def test_a_library_not_installed_is_skipped_as_unavailable(
    monkeypatch: pytest.MonkeyPatch, fresh_availability: None
) -> None:
    monkeypatch.setitem(_libraries._MODULES, "torch", "scatterx_no_such_module")
    outcome = run_case("numpy", SPEC, library="torch")
    assert outcome.status == "skipped"
    assert outcome.library_unavailable
    assert not outcome.unavailable
    assert outcome.detail == "torch is unavailable: torch is not installed (pip install torch)"


def test_a_device_the_library_lacks_is_skipped_as_unavailable(fresh_availability: None) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("torch has a CUDA device here")
    gpu = WrongBackend("gpu", lambda answer, request: answer, ("cupy:ndarray",))
    outcome = _run_wrong(gpu, "torch")
    assert outcome.status == "skipped"
    assert outcome.library_unavailable
    assert "has no CUDA device" in outcome.detail


def test_a_library_without_gpu_arrays_is_skipped_on_a_gpu_backend() -> None:
    _installed("array_api_strict")
    gpu = WrongBackend("gpu", lambda answer, request: answer, ("cupy:ndarray",))
    outcome = _run_wrong(gpu, "array_api_strict")
    assert outcome.status == "skipped"
    assert not outcome.library_unavailable  # --require-library cannot ask for the impossible
    assert outcome.detail == "array_api_strict has no arrays on cuda (gpu's device)"


def test_a_backend_of_neither_numpy_nor_cupy_arrays_has_no_library_rows() -> None:
    other = WrongBackend("other", lambda answer, request: answer, ("dask:Array",))
    outcome = _run_wrong(other, "torch")
    assert outcome.status == "skipped"
    assert not outcome.library_unavailable
    assert outcome.detail == "other serves dask:Array: no device for torch arrays"


@pytest.mark.parametrize(
    ("library", "dtype", "detail"),
    [
        ("torch", np.dtypes.StringDType(), "torch holds numbers only"),
        ("jax", np.dtype(">f4"), "jax holds native byte order only"),
        ("array_api_strict", np.dtype(np.float16), "array_api_strict cannot hold dtype float16"),
    ],
)
def test_a_dtype_the_library_cannot_hold_is_skipped(
    library: str, dtype: np.dtype[Any], detail: str
) -> None:
    _installed(library)
    case = Case(
        "held?", "spec", np.zeros(3, dtype), np.array([0]), np.zeros(1, dtype), reduction="max"
    )
    outcome = run_case("numpy", case, library=library)
    assert outcome.status == "skipped"
    assert not outcome.library_unavailable
    assert outcome.detail.startswith(detail)


def test_jax_without_x64_refuses_64_bit_dtypes_rather_than_downcast() -> None:
    jax = pytest.importorskip("jax")
    adapter = _libraries.library("jax")
    with jax.enable_x64(False), pytest.raises(TypeError, match="would make int64 32-bit"):
        adapter.from_numpy(np.arange(3), "cpu")
    with jax.enable_x64(False):
        assert adapter.to_numpy(adapter.from_numpy(np.arange(3, dtype=np.int32), "cpu")).dtype == (
            np.int32
        )


def test_an_unknown_library_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown array library 'numpy'; known: torch, jax"):
        run_case("numpy", SPEC, library="numpy")


@pytest.mark.parametrize(
    "values",
    [
        np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4)),
        np.arange(24, dtype=np.int16).reshape(4, 6)[::2, ::3],
        np.arange(12.0).reshape(3, 4)[::-1, ::-1],
        np.broadcast_to(np.arange(4, dtype=np.complex64), (3, 4)),
        np.array([2, 0, 255, 1], dtype=np.uint8).view(bool),  # bools of raw bytes
        np.array(5, dtype=np.int64),
    ],
    ids=["fortran", "strided", "reversed", "broadcast", "raw-bools", "scalar"],
)
def test_the_adapters_copy_the_bits_and_keep_what_layout_they_can(
    array_library: str, values: Any
) -> None:
    adapter = _libraries.library(array_library)
    held = adapter.from_numpy(values, "cpu")
    back = adapter.to_numpy(held)
    assert back.dtype == values.dtype
    assert back.shape == values.shape
    assert np.ascontiguousarray(back).tobytes() == np.ascontiguousarray(values).tobytes()
    assert not np.shares_memory(back, values)  # its own memory: a case's arrays are shared
    if array_library == "torch" and min(values.strides, default=0) >= 0:
        assert held.stride() == tuple(s // values.itemsize for s in values.strides)


def test_bfloat16_goes_through_torch_and_jax() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = np.array([1.5, -0.0, np.inf], dtype=ml_dtypes.bfloat16)
    for name in ("torch", "jax"):
        if _libraries.library(name).available() is not None:
            continue
        adapter = _libraries.library(name)
        back = adapter.to_numpy(adapter.from_numpy(values, "cpu"))
        assert back.dtype == values.dtype
        assert back.tobytes() == values.tobytes()


def test_matrix_ids_name_the_backend_then_the_library_then_the_case() -> None:
    native = _param("numba", "native", SPEC)
    through = _param("numba", "torch", SPEC)
    assert native.id == "numba-spec-example-1"
    assert native.values == ("numba", None, SPEC)
    assert through.id == "numba-torch-spec-example-1"
    assert through.values == ("numba", "torch", SPEC)
    (mark,) = through.marks
    assert mark.name == "xdist_group"
    assert mark.args == ("float32-none",)


def test_jit_rows_outside_the_cover_are_slow_and_the_cover_keeps_every_family() -> None:
    cases = [*all_cases(), *gather_cases()]
    default = [case for case in cases if in_default_run("numba", case)]
    assert all(in_default_run("numpy", case) for case in cases)
    assert len(default) < len(cases)
    assert {case.family for case in default} == {case.family for case in cases}
    assert {case.signature for case in default} == {case.signature for case in cases}
    moved = next(case for case in cases if not in_default_run("numba", case))
    assert moved.family in COVER_FAMILIES
    assert [mark.name for mark in _param("numba", "torch", moved).marks] == [
        "xdist_group",
        "slow",
    ]
    assert [mark.name for mark in _param("numpy", "torch", moved).marks] == ["xdist_group"]


def test_jit_rows_with_int32_indices_run_by_default_on_float32_only() -> None:
    cases = [*all_cases(), *gather_cases()]
    int32 = [
        case
        for case in cases
        if isinstance(case.indices, np.ndarray) and case.indices.dtype == np.int32
    ]
    default = [case for case in int32 if in_default_run("numba", case)]
    assert {case.dtype_key for case in int32} > {"float32", "bool"}
    assert {case.dtype_key for case in default} == {"float32"}
    assert {case.family for case in default} == {case.family for case in int32}
    assert all(in_default_run("numpy", case) for case in int32)


class _Options:
    """A stand-in for pytest.Config with the options given."""

    def __init__(self, **options: list[str]) -> None:
        self.options = options

    def getoption(self, name: str) -> list[str]:
        return self.options.get(name.lstrip("-").replace("-", "_"), [])


def test_scatterx_library_chooses_the_columns_and_refuses_unknown_names() -> None:
    def chosen(*names: str) -> list[str]:
        return _chosen_libraries(cast(pytest.Config, _Options(scatterx_library=list(names))))

    assert chosen() == ["native", "torch", "jax", "array_api_strict"]
    assert chosen("torch", "native", "torch") == ["torch", "native"]
    with pytest.raises(pytest.UsageError, match="'cupy': choose from native, torch"):
        chosen("cupy")


def test_require_library_turns_the_skip_into_a_failure() -> None:
    required = cast(pytest.Config, _Options(require_library=["torch"]))
    with pytest.raises(pytest.fail.Exception, match="required array library 'torch'"):
        skip_or_fail_library(required, "torch", "torch is not installed")
    with pytest.raises(pytest.skip.Exception, match="jax is not installed"):
        skip_or_fail_library(required, "jax", "jax is not installed")


def test_a_missing_backend_is_one_test_per_column_and_fails_where_required() -> None:
    options = _Options(scatterx_backend=["never", "numpy"], scatterx_library=["native"])
    with scoped_registry(UnavailableBackend()):
        runs, missing = _columns(cast(pytest.Config, options))
    assert runs == [("numpy", "native")]
    assert missing == [(("never", "native"), "never is unavailable: it never is", "backend")]
    with pytest.raises(pytest.skip.Exception, match=r"it never is \(\d+ cases\)"):
        test_missing_column_is_said(missing[0], _Options())
    with pytest.raises(pytest.fail.Exception, match="required backend 'never'"):
        test_missing_column_is_said(missing[0], _Options(require_backend=["never"]))


# gather_elements: the same runner, the same checks.


def _gather_case(name: str) -> ConformanceCase:
    return next(c for c in gather_cases() if c.name == name)


def test_a_right_gatherer_passes_natively_and_through_each_library(array_library: str) -> None:
    right = WrongGatherer("right", lambda answer, request: answer)
    for library in (None, array_library):
        outcome = _run_wrong(right, library, GATHER)
        assert (outcome.status, outcome.detail) == ("passed", "")


@pytest.mark.parametrize(
    ("wrong", "detail"),
    [
        (lambda answer, request: answer + np.float32(1), "4 of 4 elements differ"),
        (lambda answer, request: answer.T, "2 of 4 elements differ; first at (0, 1)"),
        (lambda answer, request: answer[:1], "shape (1, 2) differs from the expected (2, 2)"),
    ],
    ids=["values", "transposed", "shape"],
)
def test_a_wrong_gather_fails(wrong: Result, detail: str) -> None:
    outcome = _run_wrong(WrongGatherer("wrong", wrong), None, GATHER)
    assert outcome.status == "failed"
    assert outcome.detail.startswith(detail)


def test_a_gather_keeping_raw_bool_bytes_fails() -> None:
    """``take`` of bools copies their bytes: the contract's 0/1 is missed."""

    def raw_take(answer: Any, request: scatterx.backend.Request) -> Any:
        data, indices = request.data, request.indices
        cut = tuple(slice(n) if d else slice(None) for d, n in enumerate(indices.shape))
        return np.take_along_axis(data[cut], indices, axis=request.axis)

    case = _gather_case("gather-edge-bool-bytes")
    outcome = _run_wrong(WrongGatherer("raw", raw_take, ("bool",)), None, case)
    assert outcome.status == "failed"
    assert "elements differ; first at (0,): got np.True_" in outcome.detail


def test_a_backend_without_gather_elements_skips_the_gather_cases(array_library: str) -> None:
    scatters_only = WrongBackend("scatters-only", lambda answer, request: answer)
    for library in (None, array_library):
        outcome = _run_wrong(scatters_only, library, GATHER)
        assert (outcome.status, outcome.detail) == (
            "skipped",
            "scatters-only has no gather_elements",
        )


def test_a_gatherer_declining_a_dtype_it_advertises_fails() -> None:
    declining = WrongGatherer("declining", lambda answer, request: answer, ("bool",))
    declining.capabilities = {"float32": frozenset({"none"})}  # but it gathers bool only
    outcome = _run_wrong(declining, None, GATHER)
    assert outcome.status == "failed"
    assert outcome.detail.startswith("declined a call its capabilities advertise: ")


def test_a_call_mixing_libraries_has_nothing_to_mix_on_numpy_arrays() -> None:
    _installed("torch")
    case = _gather_case("gather-error-mixed-numpy-indices")
    outcome = run_case("numpy", case)
    assert (outcome.status, outcome.detail) == (
        "skipped",
        "nothing to mix: the arrays of this run are NumPy's",
    )
    assert run_case("numpy", case, library="torch").status == "passed"
    wrong_match = dataclasses.replace(case, match="a message numpy does not give")
    assert run_case("numpy", wrong_match, library="torch").status == "failed"


def test_gather_ids_and_groups_name_the_operation() -> None:
    through = _param("numba", "torch", GATHER)
    assert through.id == "numba-torch-gather-onnx-0"
    (mark,) = through.marks
    assert mark.args == ("float32-gather",)


def test_a_backend_without_an_operation_is_one_test_per_column_and_operation() -> None:
    scatters_only = WrongBackend("scatters-only", lambda answer, request: answer)
    options = _Options(scatterx_backend=["scatters-only"], scatterx_library=["native"])
    with scoped_registry(scatters_only):
        runs, missing = _columns(cast(pytest.Config, options))
    assert runs == [("scatters-only", "native")]
    lacked = ("gather_elements", "scatter_nd", "gather_nd")
    assert missing == [
        (("scatters-only", "native"), f"scatters-only has no {operation}", operation)
        for operation in lacked
    ]
    assert [_missing_id(m) for m in missing] == [f"scatters-only-native-{op}" for op in lacked]
    reason = "scatters-only has no gather_elements"
    with pytest.raises(pytest.skip.Exception, match=rf"{reason} \(\d+ gather_elements cases\)"):
        test_missing_column_is_said(missing[0], _Options(require_backend=["scatters-only"]))
