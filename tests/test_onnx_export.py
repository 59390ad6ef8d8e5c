"""A torch model that calls scatterx exports to ONNX as the standard nodes, both ways.

Each model is exported by ``torch.onnx.export(..., dynamo=True)``, by ``torch.export``
then ``torch.onnx.export`` with :func:`scatterx.onnx.torch_translations`, and by the
TorchScript exporter (``dynamo=False``); the file passes onnx's full check, and
onnxruntime and onnx's ReferenceEvaluator (with scatterx's ops) give eager torch's bits.
Floats hold integers where a sum's order is onnxruntime's to choose.
"""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from onnx.reference import ReferenceEvaluator  # noqa: E402

import scatterx  # noqa: E402
import scatterx.onnx  # noqa: E402

HOW = ("dynamo", "program", "torchscript")
NAMES = ("data", "indices", "updates")


def export(model: Any, args: tuple[Any, ...], how: str, dynamic: bool = False) -> Any:
    """The ONNX model of ``model`` on ``args``, exported ``how``."""
    names = list(NAMES[: len(args)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation
        if how == "torchscript":
            buffer = io.BytesIO()
            axes = {name: {0: "batch"} for name in names} if dynamic else None
            torch.onnx.export(
                model,
                args,
                buffer,
                dynamo=False,
                opset_version=18,
                input_names=names,
                dynamic_axes=axes,
            )
            return onnx.load_from_string(buffer.getvalue())
        shapes = {name: {0: torch.export.Dim("batch")} for name in names} if dynamic else None
        if how == "dynamo":
            program = torch.onnx.export(
                model,
                args,
                dynamo=True,
                input_names=names,
                dynamic_shapes=shapes,
                verbose=False,
            )
        else:
            exported = torch.export.export(model, args, dynamic_shapes=shapes)
            program = torch.onnx.export(
                exported,
                custom_translation_table=scatterx.onnx.torch_translations(),
                verbose=False,
            )
    return program.model_proto


def check_runs(model: Any, proto: Any, args: tuple[Any, ...]) -> None:
    """Full check; onnxruntime's and the evaluator's results equal eager torch's bitwise."""
    onnx.checker.check_model(proto, full_check=True)
    domains = {node.domain for node in proto.graph.node}
    assert domains <= {""}, f"nodes outside the default domain: {domains}"
    expected = model(*(a.clone() for a in args))
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    feeds = {i.name: a.numpy() for i, a in zip(proto.graph.input, args, strict=False)}
    sessions = (
        ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]),
        ReferenceEvaluator(proto, new_ops=scatterx.onnx.ops),
    )
    for session in sessions:
        got = session.run(None, feeds)
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_array_equal(g, e.numpy(), strict=True)


def ops_of(proto: Any) -> list[str]:
    return [node.op_type for node in proto.graph.node]


class Scatter(torch.nn.Module):
    def __init__(self, axis: int, reduction: str) -> None:
        super().__init__()
        self.axis, self.reduction = axis, reduction

    def forward(self, data: Any, indices: Any, updates: Any) -> Any:
        out = scatterx.scatter_elements(
            data, indices, updates, axis=self.axis, reduction=self.reduction
        )
        return torch.relu(out)


class ScatterInPlace(Scatter):
    def forward(self, data: Any, indices: Any, updates: Any) -> Any:
        scatterx.scatter_elements(
            data, indices, updates, axis=self.axis, reduction=self.reduction, out=data
        )
        return torch.relu(data)


class Gather(torch.nn.Module):
    def __init__(self, axis: int, into: bool = False) -> None:
        super().__init__()
        self.axis, self.into = axis, into

    def forward(self, data: Any, indices: Any) -> Any:
        if self.into:
            out = torch.empty(indices.shape, dtype=data.dtype)
            scatterx.gather_elements(data, indices, axis=self.axis, out=out)
            return out * 2
        return scatterx.gather_elements(data, indices, axis=self.axis) * 2


def scatter_args(axis: int, batch: int = 4) -> tuple[Any, ...]:
    """Integer-valued floats; negative and duplicate indices along ``axis``."""
    rng = np.random.default_rng(7 + batch)
    shape, index_shape = [batch, 5], [batch, 5]
    index_shape[axis] = 3 if axis == 1 else batch
    data = rng.integers(-4, 5, shape).astype(np.float32)
    size = shape[axis]
    indices = rng.integers(-size, size, index_shape)
    indices.flat[:2] = [-1, size - 1]  # a duplicate, one negative
    updates = rng.integers(-3, 4, index_shape).astype(np.float32)
    return tuple(torch.from_numpy(a) for a in (data, indices, updates))


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_exports(how: str, reduction: str, axis: int) -> None:
    model, args = Scatter(axis, reduction), scatter_args(axis)
    if reduction == "none":  # ONNX leaves duplicates under "none" undefined: none here
        args[1][:] = torch.from_numpy(_distinct(args[1].numpy(), axis, args[0].shape[axis]))
    proto = export(model, args, how)
    assert ops_of(proto).count("ScatterElements") == 1
    check_runs(model, proto, args)


def _distinct(indices: np.ndarray, axis: int, size: int) -> np.ndarray:
    """Indices with no duplicate along ``axis`` (negative ones kept)."""
    moved = np.moveaxis(indices, axis, -1)
    rows = np.stack([np.arange(moved.shape[-1]) - size for _ in moved.reshape(-1, moved.shape[-1])])
    return np.moveaxis(rows.reshape(moved.shape), -1, axis)


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_out_data_exports_the_write(how: str, reduction: str) -> None:
    """``out=data`` once exported (dynamo=False) as ``Relu(data)``: indices and updates
    gone, the scatter dropped. Now the write is the node, and the model's inputs stay."""
    model, args = ScatterInPlace(1, reduction), scatter_args(1)
    if reduction == "none":
        args[1][:] = torch.from_numpy(_distinct(args[1].numpy(), 1, args[0].shape[1]))
    proto = export(model, args, how)
    assert "ScatterElements" in ops_of(proto)
    assert len(proto.graph.input) == 3
    check_runs(model, proto, args)


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("into", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_gather_exports(how: str, into: bool, axis: int) -> None:
    data, indices, _ = scatter_args(axis)
    model = Gather(axis, into)
    proto = export(model, (data, indices), how)
    assert ops_of(proto).count("GatherElements") == 1
    assert "Constant" not in ops_of(proto)[:1] or len(proto.graph.input) == 2
    check_runs(model, proto, (data, indices))


class EmbeddingStep(torch.nn.Module):
    """An embedding's gradient step: rows gathered, a loss's gradient scattered back."""

    def forward(self, table: Any, rows: Any, grad: Any) -> Any:
        picked = scatterx.gather_elements(table, rows, axis=0)
        step = scatterx.scatter_elements(
            torch.zeros_like(table), rows, grad * picked, axis=0, reduction="add"
        )
        return table - step * 0.5


@pytest.mark.parametrize("how", HOW)
def test_embedding_step_exports(how: str) -> None:
    rng = np.random.default_rng(3)
    table = torch.from_numpy(rng.integers(-4, 5, (6, 3)).astype(np.float32))
    rows = torch.from_numpy(np.repeat(rng.integers(0, 6, (8, 1)), 3, axis=1))
    grad = torch.from_numpy(rng.integers(-2, 3, (8, 3)).astype(np.float32))
    model = EmbeddingStep()
    proto = export(model, (table, rows, grad), how)
    assert {"GatherElements", "ScatterElements"} <= set(ops_of(proto))
    check_runs(model, proto, (table, rows, grad))


@pytest.mark.parametrize("how", HOW)
def test_dynamic_batch(how: str) -> None:
    model = Scatter(1, "add")
    proto = export(model, scatter_args(1, batch=4), how, dynamic=True)
    for batch in (4, 7):
        check_runs(model, proto, scatter_args(1, batch=batch))


@pytest.mark.filterwarnings("ignore")  # the TorchScript exporter's deprecation
@pytest.mark.parametrize(("reduction", "opset"), [("add", 15), ("max", 17), ("none", 10)])
def test_torchscript_opset_too_low_says_which(reduction: str, opset: int) -> None:
    model, args = Scatter(1, reduction), scatter_args(1)
    needed = {"add": 16, "max": 18, "none": 11}[reduction]
    with pytest.raises(Exception, match=f"needs opset {needed}"):
        torch.onnx.export(model, args, io.BytesIO(), dynamo=False, opset_version=opset)


def test_operators_are_named_after_import() -> None:
    """``torch.ops.scatterx`` is there once torch and scatterx are imported."""
    assert callable(torch.ops.scatterx.scatter_elements.default)


class OutView(torch.nn.Module):
    """``out=`` a slice of another tensor, which the model returns."""

    def forward(self, data: Any, indices: Any, updates: Any, buf: Any) -> Any:
        scatterx.scatter_elements(data, indices, updates, axis=1, reduction="add", out=buf[1:])
        return buf


def _view_args() -> tuple[Any, ...]:
    data, indices, updates = scatter_args(1)
    return data, indices, updates, torch.zeros(data.shape[0] + 1, data.shape[1])


@pytest.mark.parametrize("how", ["dynamo", "program"])
def test_out_a_view_exports_the_write(how: str) -> None:
    model, args = OutView(), _view_args()
    proto = export(model, args, how)
    assert len(proto.graph.input) == 4
    check_runs(model, proto, args)


@pytest.mark.filterwarnings("ignore")
def test_out_a_view_is_refused_where_torchscript_would_drop_the_write() -> None:
    """The TorchScript exporter once exported this model as ``buf``, unchanged."""
    model, args = OutView(), _view_args()
    with pytest.raises(ValueError, match="out= cannot be a view of another tensor"):
        export(model, args, "torchscript")
    with pytest.raises(ValueError, match="out= cannot be a view of another tensor"):
        torch.jit.trace(model, args, check_trace=False)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("model", [Scatter(1, "add"), ScatterInPlace(1, "add"), Gather(0, True)])
def test_a_traced_module_exports_with_torchscript(model: Any) -> None:
    """A module made by ``torch.jit.trace`` is exported without scatterx running again:
    its ``out=`` write was once dropped, and its functional call not translated."""
    args = scatter_args(1) if isinstance(model, Scatter) else scatter_args(0)[:2]
    traced = torch.jit.trace(model, tuple(a.clone() for a in args), check_trace=False)
    buffer = io.BytesIO()
    names = list(NAMES[: len(args)])
    torch.onnx.export(
        traced, tuple(a.clone() for a in args), buffer, dynamo=False, input_names=names
    )
    proto = onnx.load_from_string(buffer.getvalue())
    assert len(proto.graph.input) == len(args)
    check_runs(model, proto, args)


class OutInto(torch.nn.Module):
    """A scatter (or a gather) into ``out``, the model's last argument."""

    def __init__(self, gather: bool = False) -> None:
        super().__init__()
        self.gather = gather

    def forward(self, *arrays: Any) -> Any:
        *inputs, out = arrays
        if self.gather:
            scatterx.gather_elements(*inputs, axis=1, out=out)
        else:
            scatterx.scatter_elements(*inputs, axis=1, reduction="add", out=out)
        return out * 1


class OutIsUpdates(torch.nn.Module):
    def forward(self, data: Any, indices: Any, updates: Any) -> Any:
        scatterx.scatter_elements(data, indices, updates, axis=1, reduction="add", out=updates)
        return updates * 1


class GatherOutIsData(torch.nn.Module):
    def forward(self, data: Any, indices: Any) -> Any:
        scatterx.gather_elements(data, indices, axis=1, out=data)
        return data * 1


def _refused_calls() -> list[tuple[Any, tuple[Any, ...], type, str]]:
    data, indices, updates = scatter_args(1)
    square = scatter_args(0)  # indices of data's shape, valid along axis 1 too
    return [
        (OutInto(), (data, indices, updates, torch.zeros(data.shape, dtype=torch.int64)),
         TypeError, "out must have the dtype of data"),
        (OutInto(), (data, indices, updates, torch.zeros(2, *data.shape)),
         ValueError, "out must have the shape of data"),
        (OutInto(gather=True), (data, indices, torch.zeros(data.shape)),
         ValueError, "out must have the shape of indices"),
        (OutIsUpdates(), square, ValueError, "out overlaps updates"),
        (GatherOutIsData(), square[:2], ValueError, "out overlaps data"),
        (Scatter(2, "add"), (data, indices, updates), ValueError, "axis must be in"),
    ]  # fmt: skip


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("index", range(len(_refused_calls())))
def test_an_export_refuses_what_the_eager_call_refuses(how: str, index: int) -> None:
    model, args, error, message = _refused_calls()[index]
    with pytest.raises(error, match=message):
        model(*(a.clone() for a in args))
    with pytest.raises(Exception, match=message) as caught:
        export(model, tuple(a.clone() for a in args), how)
    found: BaseException | None = caught.value
    while found is not None and not isinstance(found, error):
        found = found.__cause__ or found.__context__
    assert isinstance(found, error)


def test_translations_in_a_new_process_define_the_operators() -> None:
    """``torch_translations()`` before torch is imported: torch's import defines the
    operators (scatterx's entry point) while the translations wait for them; it once hung."""
    import subprocess
    import sys

    code = (
        "import scatterx, scatterx.onnx; t = scatterx.onnx.torch_translations(); "
        "print(sorted(str(k) for k in t))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "scatterx.gather_elements.default" in done.stdout
    assert "scatterx.scatter_elements.default" in done.stdout
