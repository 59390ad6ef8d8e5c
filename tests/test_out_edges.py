"""Edges of ``out=`` and of five messages (issue 25, items 3 to 5): a Parameter under
``torch.no_grad()``, an ``out`` whose elements share memory, and what the errors say."""

from __future__ import annotations

import numpy as np
import pytest

import scatterx

torch = pytest.importorskip("torch")


def test_a_parameter_under_no_grad_is_written_as_scatter_does() -> None:
    """Contract section 7: the optimizer's update in place runs, as ``p.scatter_`` does."""
    param = torch.nn.Parameter(torch.zeros(4))
    index, ones = torch.tensor([1, 1, 3]), torch.ones(3)
    with torch.no_grad():
        got = scatterx.scatter_elements(param, index, ones, reduction="add", out=param)
        expected = torch.zeros(4).scatter_add_(0, index, ones)
    assert got is param
    assert torch.equal(param.detach(), expected)
    assert param.requires_grad


def test_a_parameter_with_grad_mode_on_is_still_refused() -> None:
    param = torch.nn.Parameter(torch.zeros(4))
    with pytest.raises(TypeError, match="out requires grad"):
        scatterx.scatter_elements(param, torch.tensor([1]), torch.ones(1), out=param)


def _expanded() -> tuple[object, ...]:
    return (
        torch.zeros(1).expand(4),
        np.lib.stride_tricks.as_strided(np.zeros(1), (4,), (0,), writeable=True),
    )


@pytest.mark.parametrize("library", ["torch", "numpy"])
@pytest.mark.parametrize("in_place", [False, True], ids=["out", "in-place"])
def test_an_out_whose_elements_share_memory_is_refused(library: str, in_place: bool) -> None:
    """As torch's ``scatter_`` refuses it: the answer would depend on the write order."""
    out = _expanded()[library == "numpy"]
    new = torch if library == "torch" else np
    indices, updates = new.asarray([0, 1, 2, 3]), new.asarray([0.0, 1.0, 2.0, 3.0])
    data = out if in_place else new.zeros(4)
    before = np.asarray(out).copy()
    with pytest.raises(ValueError, match="more than one element of out refers to a single"):
        scatterx.scatter_elements(data, indices, updates, out=out)
    np.testing.assert_array_equal(np.asarray(out), before)


def test_torch_int16_indices_are_told_to_call_to() -> None:
    with pytest.raises(
        TypeError, match=r"got int16\. Convert them with indices\.to\(torch\.int64\)"
    ):
        scatterx.scatter_elements(
            torch.zeros(4), torch.tensor([1], dtype=torch.int16), torch.ones(1)
        )
    with pytest.raises(TypeError, match=r"indices\.astype\(np\.int64\)"):
        scatterx.scatter_elements(np.zeros(4), np.array([1], np.int16), np.ones(1))


def test_an_axis_of_size_zero_says_no_index_is_valid() -> None:
    told = "for axis 0 with size 0: no index is valid$"
    with pytest.raises(IndexError, match=told):
        scatterx.scatter_elements(
            np.zeros((0, 3)), np.zeros((1, 3), np.int64), np.zeros((1, 3)), axis=0
        )


def test_a_sparse_out_is_told_like_sparse_data() -> None:
    out = torch.zeros(4).to_sparse()
    with pytest.raises(TypeError, match=r"out is a torch\.sparse_coo tensor"):
        scatterx.scatter_elements(torch.zeros(4), torch.tensor([1]), torch.ones(1), out=out)


def test_list_indices_beside_tensors_are_named_a_list() -> None:
    with pytest.raises(TypeError, match="indices: builtins:list, updates: torch:Tensor"):
        scatterx.scatter_elements(torch.zeros(4), [1], torch.ones(1))


def test_an_inference_tensor_as_out_is_written_in_inference_mode_only() -> None:
    with torch.inference_mode():
        out = torch.zeros(4)
    args = (torch.zeros(4), torch.tensor([1]), torch.ones(1))
    with pytest.raises(RuntimeError, match="out is an inference tensor"):
        scatterx.scatter_elements(*args, out=out)
    assert not out.any()
    with torch.inference_mode():
        scatterx.scatter_elements(*args, out=out)
    assert out.tolist() == [0.0, 1.0, 0.0, 0.0]


def _saved_then_written(write: object) -> None:
    """A tensor autograd saved for backward, then written in place by ``write``."""
    x, w = torch.randn(3, 4), torch.randn(3, 4, requires_grad=True)
    y = (x * w).sum()  # saves x for w's gradient
    write(x)  # type: ignore[operator]
    y.backward()


def test_a_write_into_out_is_seen_by_autograd_as_torchs_own_in_place_ops_are() -> None:
    """Contract section 7: in place as ``Tensor.scatter_`` does, so autograd refuses the
    backward that needs the overwritten values instead of using them silently."""
    index, ones = torch.tensor([[0, 1, 2, 0]]), torch.ones(1, 4)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _saved_then_written(lambda x: x.scatter_add_(0, index, ones))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _saved_then_written(
            lambda x: scatterx.scatter_elements(x, index, ones, reduction="add", out=x)
        )


@pytest.mark.parametrize("call", ["scatter out", "scatter in place", "gather out"])
def test_each_write_into_out_bumps_its_version_and_an_error_does_not(call: str) -> None:
    data, out = torch.zeros(3, 4), torch.zeros(3, 4)
    index, bad = torch.tensor([[0, 1, 2, 0]]), torch.tensor([[0, 1, 2, 3]])

    def write(indices: object) -> None:
        if call == "gather out":
            scatterx.gather_elements(data, indices, out=out[:1])
        else:
            target = data if call == "scatter in place" else out
            scatterx.scatter_elements(data, indices, torch.ones(1, 4), out=target)

    written = data if call == "scatter in place" else out
    before = written._version
    write(index)
    assert written._version > before
    before = written._version
    with pytest.raises(IndexError):
        write(bad)
    assert written._version == before
