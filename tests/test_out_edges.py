"""Edges of ``out=`` and of five messages (issue 25, items 3 to 5): a Parameter under
``torch.no_grad()``, an ``out`` whose elements share memory, and what the errors say."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx.testing import (
    assert_bitwise_equal,
    reference_gather_elements,
    reference_scatter_elements,
)

#: The backends of NumPy arrays that write into ``out`` here.
BACKENDS = [r.name for r in scatterx.backends() if r.available and r.name in ("numpy", "numba")]


@pytest.fixture
def torch() -> Any:
    """torch, or the test skipped: the NumPy cases run without it."""
    return pytest.importorskip("torch")


def test_a_parameter_under_no_grad_is_written_as_scatter_does(torch: Any) -> None:
    """Contract section 7: the optimizer's update in place runs, as ``p.scatter_`` does."""
    param = torch.nn.Parameter(torch.zeros(4))
    index, ones = torch.tensor([1, 1, 3]), torch.ones(3)
    with torch.no_grad():
        got = scatterx.scatter_elements(param, index, ones, reduction="add", out=param)
        expected = torch.zeros(4).scatter_add_(0, index, ones)
    assert got is param
    assert torch.equal(param.detach(), expected)
    assert param.requires_grad


def test_a_parameter_with_grad_mode_on_is_still_refused(torch: Any) -> None:
    param = torch.nn.Parameter(torch.zeros(4))
    with pytest.raises(TypeError, match="out requires grad"):
        scatterx.scatter_elements(param, torch.tensor([1]), torch.ones(1), out=param)


def _strided(buffer: Any, shape: tuple[int, ...], steps: tuple[int, ...]) -> Any:
    """A writable ``as_strided`` view of the float64 ``buffer``, its steps in elements."""
    strides = tuple(8 * step for step in steps)
    return np.lib.stride_tricks.as_strided(buffer, shape, strides, writeable=True)


#: Views of a 16-element buffer whose elements meet (a sliding window, a stride of 0 as
#: ``broadcast_to`` and ``expand`` make) or cannot be shown apart: the interleaved view's
#: six elements are distinct, but its strides, sorted, do not step over each other.
_OVERLAPPING = {
    "window": ((4, 3), (1, 1)),
    "stride 0": ((4, 3), (0, 1)),
    "stride 0 of expand": ((12,), (0,)),
    "interleaved": ((3, 2), (2, 3)),
    "3-d window": ((2, 2, 3), (4, 1, 2)),
}
_LIBRARIES = ["numpy", "torch", "array_api_strict"]


def _in_library(library: str, array: Any) -> Any:
    """``array`` as an array of ``library`` over the same memory."""
    if library == "numpy":
        return array
    module = pytest.importorskip(library)
    return module.from_dlpack(array)


def _call_into(call: str, out: Any, library: str, backend: str) -> Any:
    """Scatter (into ``out``, or in place) or gather into ``out``, arrays of ``library``."""
    shape = out.shape
    rng = np.random.default_rng(0)
    indices = _in_library(library, rng.integers(0, shape[0], shape))
    if call == "gather out":
        data = _in_library(library, rng.random((shape[0] + 1, *shape[1:])))
        return scatterx.gather_elements(data, indices, out=out, backend=backend)
    updates = _in_library(library, rng.random(shape))
    data = out if call == "scatter in place" else _in_library(library, rng.random(shape))
    return scatterx.scatter_elements(
        data, indices, updates, reduction="add", out=out, backend=backend
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("library", _LIBRARIES)
@pytest.mark.parametrize("call", ["scatter out", "scatter in place", "gather out"])
@pytest.mark.parametrize("layout", _OVERLAPPING)
def test_an_out_whose_elements_overlap_is_refused_untouched(
    backend: str, library: str, call: str, layout: str
) -> None:
    """Contract section 7: the result would depend on the order of the writes (updates
    lost silently), so the call refuses it before anything is written."""
    buffer = np.arange(16.0)
    shape, steps = _OVERLAPPING[layout]
    out = _in_library(library, _strided(buffer, shape, steps))
    before = buffer.copy()
    with pytest.raises(ValueError, match=r"out has elements that share memory.*contiguous copy"):
        _call_into(call, out, library, backend)
    assert buffer.tobytes() == before.tobytes()


def _layouts() -> dict[str, Any]:
    """Writable float64 arrays in the layouts that slicing, transposing, reshaping and a
    change of memory order make, each a view of a buffer of its own."""
    return {
        "C": np.zeros((4, 3)),
        "F": np.asfortranarray(np.zeros((4, 3))),
        "transposed": np.zeros((3, 4)).T,
        "3-d transposed": np.zeros((2, 3, 4)).transpose(2, 0, 1),
        "sliced": np.zeros((8, 7))[1::2, ::3],
        "negative strides": np.zeros((4, 3))[::-1, ::-1],
        "F, a column order reversed": np.asfortranarray(np.zeros((4, 3)))[:, ::-1],
        "sliced, reshaped": np.zeros((4, 6))[:, ::2].reshape(2, 2, 3),
        "reversed, reshaped": np.zeros(12)[::-1].reshape(3, 4),
        "a field of records": np.zeros(12, [("a", "f8"), ("b", "f8")])["a"].reshape(4, 3),
        "new axis (stride 0, size 1)": np.zeros((4, 3))[:, None, :],
        "size 1, odd stride": np.lib.stride_tricks.as_strided(
            np.zeros(12), (4, 1, 3), (24, 5, 8), writeable=True
        ),
        "size 1 first, reversed": np.zeros((1, 4, 1, 3))[:, ::-1],
        "0-size": np.zeros((0, 3)),
        "0-size, sliced": np.zeros((4, 3))[:, 3:],
        "0-size, stride 0": _strided(np.zeros(1), (0, 3), (0, 0)),
    }


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("call", ["scatter out", "scatter in place", "gather out"])
@pytest.mark.parametrize("layout", list(_layouts()))
def test_an_out_in_every_layout_of_views_gets_the_result(
    backend: str, call: str, layout: str
) -> None:
    out = _layouts()[layout]
    assert not out.flags.owndata or layout in ("C", "F", "0-size")
    shape = out.shape
    rng = np.random.default_rng(1)
    indices = rng.integers(0, max(shape[0], 1), shape)
    values, updates = rng.random(shape), rng.random(shape)
    if call == "gather out":
        got = scatterx.gather_elements(values, indices, out=out, backend=backend)
        expected = reference_gather_elements(values, indices, 0)
    else:
        data = values
        if call == "scatter in place":
            out[...] = values
            data = out
        got = scatterx.scatter_elements(
            data, indices, updates, reduction="add", out=out, backend=backend
        )
        expected = reference_scatter_elements(values, indices, updates, 0, "add")
    assert got is out
    assert_bitwise_equal(out, expected)


def test_torch_int16_indices_are_told_to_call_to(torch: Any) -> None:
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


def test_a_sparse_out_is_told_like_sparse_data(torch: Any) -> None:
    out = torch.zeros(4).to_sparse()
    with pytest.raises(TypeError, match=r"out is a torch\.sparse_coo tensor"):
        scatterx.scatter_elements(torch.zeros(4), torch.tensor([1]), torch.ones(1), out=out)


def test_list_indices_beside_tensors_are_named_a_list(torch: Any) -> None:
    with pytest.raises(TypeError, match="indices: builtins:list, updates: torch:Tensor"):
        scatterx.scatter_elements(torch.zeros(4), [1], torch.ones(1))


def test_an_inference_tensor_as_out_is_written_in_inference_mode_only(torch: Any) -> None:
    with torch.inference_mode():
        out = torch.zeros(4)
    args = (torch.zeros(4), torch.tensor([1]), torch.ones(1))
    with pytest.raises(RuntimeError, match="out is an inference tensor"):
        scatterx.scatter_elements(*args, out=out)
    assert not out.any()
    with torch.inference_mode():
        scatterx.scatter_elements(*args, out=out)
    assert out.tolist() == [0.0, 1.0, 0.0, 0.0]


def _saved_then_written(torch: Any, write: object) -> None:
    """A tensor autograd saved for backward, then written in place by ``write``."""
    x, w = torch.randn(3, 4), torch.randn(3, 4, requires_grad=True)
    y = (x * w).sum()  # saves x for w's gradient
    write(x)  # type: ignore[operator]
    y.backward()


def test_a_write_into_out_is_seen_by_autograd_as_torchs_own_in_place_ops_are(
    torch: Any,
) -> None:
    """Contract section 7: in place as ``Tensor.scatter_`` does, so autograd refuses the
    backward that needs the overwritten values instead of using them silently."""
    index, ones = torch.tensor([[0, 1, 2, 0]]), torch.ones(1, 4)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _saved_then_written(torch, lambda x: x.scatter_add_(0, index, ones))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _saved_then_written(
            torch, lambda x: scatterx.scatter_elements(x, index, ones, reduction="add", out=x)
        )


@pytest.mark.parametrize("call", ["scatter out", "scatter in place", "gather out"])
def test_each_write_into_out_bumps_its_version_and_an_error_does_not(torch: Any, call: str) -> None:
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
