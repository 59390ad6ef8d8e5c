"""Every array library (contract section 6): the DLPack route, zero copies, refusals, explain."""

from __future__ import annotations

from typing import Any, ClassVar
from unittest import mock

import numpy as np
import pytest

import scatterx
from _backends import Recorder
from scatterx.backend import ScatterRequest
from scatterx.testing import reference_scatter_elements, scoped_registry

torch = pytest.importorskip("torch")


class TorchNative:
    """A plug-in serving torch tensors natively (through torch's own scatter_reduce)."""

    name = "torchnative"
    array_types = ("torch:Tensor",)
    priority = 50
    version = "test"
    capabilities: ClassVar[dict[str, frozenset[str]]] = {"float32": frozenset({"add"})}

    def available(self) -> str | None:
        return None

    def can_run(self, request: ScatterRequest) -> str | None:
        return None if request.reduction == "add" else "add only"

    def scatter_elements(self, request: ScatterRequest) -> Any:
        data, indices, updates = request.data, request.indices, request.updates
        return data.scatter_add(request.axis, indices, updates)


def _case() -> tuple[Any, Any, Any]:
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    indices = np.array([[1, 0, 2, 2], [0, 2, 1, 1]])
    updates = np.array([[1.5, 2.5, 3.5, 4.5], [5.5, 6.5, 7.5, 8.5]], dtype=np.float32)
    return data, indices, updates


def _expected(data: Any, indices: Any, updates: Any, **kwargs: Any) -> Any:
    return reference_scatter_elements(np.asarray(data), np.asarray(indices), updates, **kwargs)


def test_torch_cpu_result_is_a_tensor_on_the_callers_device() -> None:
    data, indices, updates = _case()
    result = scatterx.scatter_elements(
        torch.from_numpy(data), torch.from_numpy(indices), torch.from_numpy(updates),
        reduction="add",
    )  # fmt: skip
    assert type(result) is torch.Tensor
    assert result.device == torch.device("cpu")
    assert result.dtype == torch.float32
    expected = _expected(data, indices, updates, reduction="add")
    assert np.array_equal(result.numpy(), expected)


def test_torch_reaches_the_kernel_without_a_copy_both_ways() -> None:
    data, indices, updates = (torch.from_numpy(a) for a in _case())
    data = data.t()  # a transposed view: carried as is, strides and all
    indices, updates = indices.t()[:3], updates.t()[:3]
    recorder = Recorder()
    with scoped_registry(recorder):
        result = scatterx.scatter_elements(data, indices, updates, axis=1, reduction="max")
    (request,) = recorder.requests
    for seen, given in zip(request[:3], (data, indices, updates), strict=True):
        assert type(seen) is np.ndarray
        assert seen.ctypes.data == given.data_ptr()
        assert seen.strides == tuple(s * given.element_size() for s in given.stride())
    assert result.data_ptr() == recorder.results[0].ctypes.data
    assert request.array_type == "numpy:ndarray"
    assert request.device == "cpu"


@pytest.mark.parametrize(
    "view",
    [
        pytest.param(lambda t: t.t(), id="transposed"),
        pytest.param(lambda t: t[::2, 1:], id="sliced"),
        pytest.param(lambda t: t[:1].expand(4, -1), id="expanded-stride-0"),
    ],
)
def test_torch_views(view: Any) -> None:
    data = view(torch.arange(20, dtype=torch.float64).reshape(4, 5))
    rows, cols = data.shape
    indices = torch.remainder(torch.arange(rows * cols).reshape(rows, cols) * 7, rows)
    updates = view(torch.full((4, 5), 0.5, dtype=torch.float64)) * torch.arange(cols)
    before = data.clone()
    result = scatterx.scatter_elements(data, indices, updates, reduction="add")
    expected = _expected(data, indices, updates.numpy(), reduction="add")
    assert np.array_equal(result.numpy(), expected)
    assert torch.equal(data, before)


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_torch_bfloat16(index_dtype: Any) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    data = torch.linspace(-3, 3, 8, dtype=torch.bfloat16)
    indices = torch.tensor([1, 1, 7, 0, 1], dtype=index_dtype)
    updates = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.5], dtype=torch.bfloat16)
    result = scatterx.scatter_elements(data, indices, updates, reduction="add")
    assert result.dtype == torch.bfloat16
    as_numpy = [a.view(torch.int16).numpy().view(ml_dtypes.bfloat16) for a in (data, updates)]
    expected = _expected(as_numpy[0], indices, as_numpy[1], reduction="add")
    assert np.array_equal(result.view(torch.int16).numpy(), expected.view(np.int16))


def test_torch_conjugate_and_negative_bits_are_resolved() -> None:
    base = torch.tensor([1 + 2j, 3 - 4j, 5 + 6j], dtype=torch.complex64)
    data, updates = base.conj(), torch.tensor([1j, 2j], dtype=torch.complex64).conj().imag
    updates = updates.to(torch.complex64)  # a real view with the negative bit, made complex
    indices = torch.tensor([0, 0])
    result = scatterx.scatter_elements(data, indices, updates, reduction="add")
    expected = _expected(
        data.resolve_conj(), indices, updates.resolve_neg().numpy(), reduction="add"
    )
    assert np.array_equal(result.numpy(), expected)
    assert data.is_conj()
    assert torch.equal(base, torch.tensor([1 + 2j, 3 - 4j, 5 + 6j]))
    decision = scatterx.explain(data, indices, updates, reduction="add")
    assert "resolving the conjugate or negative bit copies" in str(decision.route)


def test_torch_sparse_is_refused() -> None:
    with pytest.raises(TypeError, match=r"sparse_coo tensor: pass data\.to_dense\(\)"):
        scatterx.scatter_elements(torch.zeros(3).to_sparse(), torch.tensor([1]), torch.ones(1))


def test_a_device_no_backend_serves_names_it() -> None:
    meta = {"device": "meta"}
    args = torch.zeros(3, **meta), torch.tensor([1], **meta), torch.ones(1, **meta)
    with pytest.raises(scatterx.BackendError) as info:
        scatterx.scatter_elements(*args)
    message = str(info.value)
    assert "torch:Tensor on device meta" in message
    assert "numpy: does not serve torch:Tensor (serves numpy:ndarray)" in message
    assert "cupy: does not serve torch:Tensor (serves cupy:ndarray)" in message


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((torch.zeros(3), np.array([1]), torch.ones(1)), "one array library"),
        ((torch.zeros(3), [1], torch.ones(1)), "one array library"),
        ((np.zeros(3), torch.tensor([1]), np.ones(1)), "one array library"),
        ((torch.zeros(3), torch.tensor([1], device="meta"), torch.ones(1)), "one device"),
        ((torch.zeros(3), torch.tensor([1.0]), torch.ones(1)), "int32 or int64; got float32"),
        ((torch.zeros(3), torch.tensor([1]), torch.ones(1).double()), "updates float64"),
        ((torch.zeros(2, dtype=torch.float8_e4m3fn), torch.tensor([1]),
          torch.zeros(1, dtype=torch.float8_e4m3fn)), "float8_e4m3fn, which the contract"),
    ],
)  # fmt: skip
def test_torch_bad_input_gets_the_contracts_type_error(args: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        scatterx.scatter_elements(*args)


def test_torch_shape_and_bounds_errors() -> None:
    with pytest.raises(ValueError, match="at least one dimension"):
        scatterx.scatter_elements(torch.tensor(1.0), torch.tensor(0), torch.tensor(1.0))
    with pytest.raises(IndexError, match=r"index 5 at position \(1,\)"):
        scatterx.scatter_elements(torch.zeros(3), torch.tensor([0, 5]), torch.ones(2))


def test_numpy_scalars_are_numpy_and_have_no_axis() -> None:
    with pytest.raises(ValueError, match="data must have at least one dimension"):
        scatterx.scatter_elements(np.float32(1.0), np.array([0]), np.float32(1.0))
    with pytest.raises(ValueError, match="data must have at least one dimension"):
        scatterx.scatter_elements(np.array(1.0), 0, 1.0)


def test_a_native_plugin_is_preferred_over_the_route() -> None:
    args = torch.zeros(3), torch.tensor([1, 1]), torch.ones(2)
    with scoped_registry(TorchNative()):
        decision = scatterx.explain(*args, reduction="add")
        assert decision.backend == "torchnative"
        assert decision.route is None
        assert torch.equal(
            scatterx.scatter_elements(*args, reduction="add"), torch.tensor([0, 2, 0.0])
        )
        routed = scatterx.explain(*args, reduction="max")
        assert routed.backend == "numpy"
        assert routed.reasons["torchnative"] == "add only"
        named = scatterx.explain(*args, reduction="add", backend="numpy")
        assert named.backend == "numpy"
        assert named.route is not None


def test_explain_shows_the_route() -> None:
    args = torch.zeros(3), torch.tensor([1]), torch.ones(1)
    decision = scatterx.explain(*args, backend="numpy")
    assert decision.route == "torch:Tensor (cpu) -> numpy:ndarray by DLPack, no copy"
    assert "  route: torch:Tensor (cpu) -> numpy:ndarray by DLPack, no copy; numpy runs" in str(
        decision
    )
    reasons = scatterx.explain(*args).reasons
    assert "nor numpy:ndarray that DLPack carries it to" in str(reasons["cupy"])


def test_every_way_to_choose_works_on_tensors(monkeypatch: pytest.MonkeyPatch) -> None:
    args = torch.zeros(3), torch.tensor([1]), torch.ones(1)
    recorder = Recorder()
    with scoped_registry(recorder):
        scatterx.scatter_elements(*args, backend="numpy")
        assert not recorder.requests
        with scatterx.use_backend("recorder"):
            scatterx.scatter_elements(*args)
        monkeypatch.setenv("SCATTERX_BACKEND", "numpy")
        scatterx.scatter_elements(*args)
        monkeypatch.setenv("SCATTERX_BACKEND", "recorder")
        scatterx.scatter_elements(*args)
    assert len(recorder.requests) == 2


def test_array_api_strict() -> None:
    xp = pytest.importorskip("array_api_strict")
    data, indices, updates = xp.zeros((2, 3)), xp.asarray([[1, 0, 1]]), xp.ones((1, 3))
    result = scatterx.scatter_elements(data, indices, updates, reduction="add")
    assert type(result) is type(data)
    assert result.device == data.device
    assert result.dtype == xp.float64
    assert np.array_equal(np.asarray(result), [[0, 1, 0], [1, 0, 1]])
    # Its other devices stand for memory that no backend reaches.
    device = xp.Device("device1")
    elsewhere = (xp.asarray(a, device=device) for a in (data, indices, updates))
    with pytest.raises(
        scatterx.BackendError, match=r"on device array_api_strict.Device\('device1'\)"
    ):
        scatterx.scatter_elements(*elsewhere)
    with pytest.raises(TypeError, match="one device"):
        scatterx.scatter_elements(data, xp.asarray([[1, 0, 1]], device=device), updates)


def test_a_check_error_is_raised_once_without_a_chained_one() -> None:
    for module in (np, torch):
        args = module.zeros(3), module.ones(1), module.ones(1)
        with pytest.raises(TypeError, match="int32 or int64") as info:
            scatterx.scatter_elements(*args)
        assert info.value.__context__ is None


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_the_early_numpy_views_run_what_explain_says(reduction: str) -> None:
    """CPU tensors take a shorter way to the same decision: the one explain() shows."""
    data = torch.zeros(20000)
    indices, updates = torch.arange(20000) % 7, torch.ones(20000)
    recorder = Recorder()
    with scoped_registry(recorder):
        decision = scatterx.explain(data, indices, updates, reduction=reduction)
        result = scatterx.scatter_elements(data, indices, updates, reduction=reduction)
        assert decision.backend == "recorder"
        assert decision.route == "torch:Tensor (cpu) -> numpy:ndarray by DLPack, no copy"
    (request,) = recorder.requests
    assert request.data.ctypes.data == data.data_ptr()
    assert result.data_ptr() == recorder.results[0].ctypes.data
    if not any(b.name == "numba" and b.available for b in scatterx.backends()):
        return
    with scoped_registry(recorder), scatterx.use_backend("numba"):
        assert scatterx.explain(data, indices, updates).backend == "numba"
        scatterx.scatter_elements(data, indices, updates)
    assert len(recorder.requests) == 1


@pytest.mark.parametrize(
    ("dtype", "carried"),
    [("int64", True), ("int32", True), ("int16", False), ("uint8", False), ("uint32", False)],
)
def test_torch_carries_early_the_indices_the_contract_takes_only(dtype: str, carried: bool) -> None:
    from scatterx.libraries import torch as _torch_library

    data, updates = torch.zeros(3, 3), torch.ones(2, 3)
    scatterx.scatter_elements(data, torch.zeros(2, 3, dtype=torch.int64), updates)  # routed
    indices = torch.zeros(2, 3, dtype=getattr(torch, dtype))
    views = _torch_library.Torch.early((data, indices, updates))
    assert (views is not None) is carried
    if views is not None:  # the tensors' own memory, of their dtypes
        assert [v.dtype for v in views] == [
            np.dtype("float32"),
            np.dtype(dtype),
            np.dtype("float32"),
        ]
        assert all(
            np.shares_memory(v, t.numpy())
            for v, t in zip(views, (data, indices, updates), strict=True)
        )
    # torch's question, the thread's own (is_compiling is the process's)
    with mock.patch.object(torch.compiler, "is_compiling", return_value=True):
        assert not _torch_library.compiling()
    with mock.patch.object(torch.compiler, "is_dynamo_compiling", return_value=True):
        assert _torch_library.compiling()
