"""scatter_nd and gather_nd on torch's hosts (contract sections 9, 12 and 14): the
operators (opcheck, ``torch.compile`` as one node, ``torch.export``, ``torch.func``'s grad
and vmap), autograd against torch's own gradients of the same function, and the export
to ONNX as ScatterND and GatherND nodes."""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx.testing import reference_gather_nd, reference_scatter_nd

torch = pytest.importorskip("torch")

#: Rows of a (5, 3, 2) table: three of them pick row 1, one counts from the end.
ROWS = np.array([[1], [4], [1], [-4]])
#: Pairs into its first two dimensions, one twice.
PAIRS = np.array([[1, 2], [4, 0], [1, 2], [-1, 1]])


def _table(seed: int = 0, grad: bool = False) -> Any:
    values = np.random.default_rng(seed).integers(-4, 5, (5, 3, 2)).astype(np.float64)
    return torch.from_numpy(values).requires_grad_(grad)


def _updates(indices: np.ndarray, seed: int = 1, grad: bool = False) -> Any:
    shape = (*indices.shape[:-1], *(5, 3, 2)[indices.shape[-1] :])
    values = np.random.default_rng(seed).integers(-4, 5, shape).astype(np.float64)
    return torch.from_numpy(values).requires_grad_(grad)


def _torch_scatter(data: Any, indices: Any, updates: Any, reduction: str) -> Any:
    """torch's own ScatterND, one row after another (the contract's order)."""
    result = data.clone()
    for row in range(indices.shape[0]):
        where = tuple(indices[row : row + 1, column] for column in range(indices.shape[1]))
        result = result.index_put(where, updates[row : row + 1], accumulate=reduction == "add")
    return result


def _ops() -> Any:
    return torch.ops.scatterx


def test_the_operators_are_defined() -> None:
    for name in ("scatter_nd", "gather_nd", "scatter_nd_out", "gather_nd_out"):
        assert callable(getattr(_ops(), name).default)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_opcheck(reduction: str) -> None:
    data, indices, updates = _table(), torch.from_numpy(PAIRS), _updates(PAIRS)
    torch.library.opcheck(_ops().scatter_nd.default, (data, indices, updates, reduction, None))
    torch.library.opcheck(_ops().gather_nd.default, (data, indices, 0, None))
    out = torch.empty_like(data)
    torch.library.opcheck(
        _ops().scatter_nd_out.default, (data, indices, updates, reduction, "numpy", out)
    )
    batched = torch.from_numpy(np.array([[[1]], [[0]], [[2]], [[1]], [[0]]]))
    into = torch.empty(5, 1, 2, dtype=data.dtype)
    torch.library.opcheck(_ops().gather_nd_out.default, (data, batched, 1, None, into))


@pytest.mark.parametrize("indices", [ROWS, PAIRS], ids=["rows", "pairs"])
@pytest.mark.parametrize("reduction", ["none", "add"])
def test_autograd_equals_torchs_own(indices: np.ndarray, reduction: str) -> None:
    data, updates, index = (
        _table(grad=True),
        _updates(indices, grad=True),
        torch.from_numpy(indices),
    )
    g = torch.from_numpy(np.random.default_rng(2).standard_normal((5, 3, 2)))
    ours = torch.autograd.grad(
        scatterx.scatter_nd(data, index, updates, reduction=reduction), (data, updates), g
    )
    theirs = torch.autograd.grad(
        _torch_scatter(data, index, updates, reduction), (data, updates), g
    )
    for a, b in zip(ours, theirs, strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("batch_dims", [0, 1, 2])
def test_gather_gradient_adds_back_in_order(batch_dims: int) -> None:
    data = _table(grad=True)
    rng = np.random.default_rng(batch_dims)
    shape = (*(5, 3, 2)[:batch_dims], 4, 1)
    indices = torch.from_numpy(rng.integers(-2, 2, shape))  # duplicates, negatives
    result = scatterx.gather_nd(data, indices, batch_dims=batch_dims)
    g = torch.from_numpy(rng.standard_normal(tuple(result.shape)))
    (got,) = torch.autograd.grad(result, (data,), g)
    expected = np.zeros((5, 3, 2))
    flat = indices.numpy().reshape(-1, *shape[batch_dims:])
    for batch, rows in enumerate(flat):
        prefix = np.unravel_index(batch, (5, 3, 2)[:batch_dims]) if batch_dims else ()
        for row, (index,) in enumerate(rows):
            at = (*prefix, index)
            expected[at] += (
                g.numpy().reshape(len(flat), len(rows), -1)[batch, row].reshape(expected[at].shape)
            )
    np.testing.assert_array_equal(got.numpy(), expected)


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_gradcheck_and_gradgradcheck(reduction: str) -> None:
    data, updates, index = _table(grad=True), _updates(ROWS, grad=True), torch.from_numpy(ROWS)

    def scatter(d: Any, u: Any) -> Any:
        return scatterx.scatter_nd(d, index, u, reduction=reduction)

    assert torch.autograd.gradcheck(scatter, (data, updates))
    assert torch.autograd.gradgradcheck(scatter, (data, updates))


def test_gradients_of_the_other_reductions_are_refused() -> None:
    data, updates, index = _table(grad=True), _updates(ROWS, grad=True), torch.from_numpy(ROWS)
    result = scatterx.scatter_nd(data, index, updates, reduction="max")
    with pytest.raises(NotImplementedError, match="no gradient of scatter_nd with reduction='max'"):
        result.sum().backward()


def _model(data: Any, indices: Any, updates: Any) -> Any:
    scattered = scatterx.scatter_nd(data, indices, updates, reduction="add")
    return (scatterx.gather_nd(scattered * 2, indices) ** 2).sum()


def test_compile_fullgraph_equals_eager_with_gradients() -> None:
    data, updates, index = _table(grad=True), _updates(ROWS, grad=True), torch.from_numpy(ROWS)
    expected = _model(data, index, updates)
    expected_grads = torch.autograd.grad(expected, (data, updates))
    compiled = torch.compile(_model, backend="aot_eager", fullgraph=True)
    got = compiled(data, index, updates)
    assert torch.equal(got, expected)
    for a, b in zip(torch.autograd.grad(got, (data, updates)), expected_grads, strict=True):
        assert torch.equal(a, b)


def test_compile_out_and_in_place_equal_eager() -> None:
    index, updates = torch.from_numpy(ROWS), _updates(ROWS)

    def into(data: Any) -> Any:
        scatterx.scatter_nd(data, index, updates, reduction="add", out=data)
        return data * 1

    compiled = torch.compile(into, backend="aot_eager", fullgraph=True)
    expected = reference_scatter_nd(_table().numpy(), ROWS, updates.numpy(), "add")
    np.testing.assert_array_equal(compiled(_table()).numpy(), expected)


def test_export_keeps_one_node_each() -> None:
    class Model(torch.nn.Module):
        def forward(self, data: Any, indices: Any, updates: Any) -> Any:
            return _model(data, indices, updates)

    args = (_table(), torch.from_numpy(ROWS), _updates(ROWS))
    program = torch.export.export(Model(), args)
    targets = [str(n.target) for n in program.graph.nodes if n.op == "call_function"]
    assert targets.count("scatterx.scatter_nd.default") == 1
    assert targets.count("scatterx.gather_nd.default") == 1
    assert torch.equal(program.module()(*args), Model()(*args))


def test_func_grad_equals_autograd() -> None:
    index, data = torch.from_numpy(ROWS), _table()

    def loss(updates: Any) -> Any:
        return _model(data, index, updates)

    updates = _updates(ROWS)
    (expected,) = torch.autograd.grad(loss(updates.requires_grad_()), (updates,))
    assert torch.equal(torch.func.grad(loss)(updates.detach()), expected)


def test_vmap_equals_a_loop() -> None:
    tables = torch.stack([_table(seed) for seed in range(3)])
    rows = torch.from_numpy(np.stack([ROWS, ROWS[::-1], ROWS % 2]))
    updates = torch.stack([_updates(ROWS, seed) for seed in range(3)])
    for reduction in ("none", "add", "max"):
        scatter = torch.func.vmap(_scattering(reduction))
        got = scatter(tables, rows, updates)
        for batch in range(3):
            expected = reference_scatter_nd(
                tables[batch].numpy(), rows[batch].numpy(), updates[batch].numpy(), reduction
            )
            np.testing.assert_array_equal(got[batch].numpy(), expected)
    pairs = torch.from_numpy(np.random.default_rng(4).integers(-3, 3, (3, 5, 2, 1)))
    gathered = torch.func.vmap(lambda d, i: scatterx.gather_nd(d, i, batch_dims=1))(tables, pairs)
    for batch in range(3):
        expected = reference_gather_nd(tables[batch].numpy(), pairs[batch].numpy(), 1)
        np.testing.assert_array_equal(gathered[batch].numpy(), expected)


def _scattering(reduction: str) -> Any:
    def scatter(data: Any, indices: Any, updates: Any) -> Any:
        return scatterx.scatter_nd(data, indices, updates, reduction=reduction)

    return scatter


def test_vmap_of_an_unbatched_table() -> None:
    table, rows = _table(), torch.from_numpy(np.stack([ROWS, ROWS[::-1]]))
    got = torch.func.vmap(lambda i: scatterx.gather_nd(table, i), in_dims=0)(rows)
    for batch in range(2):
        expected = reference_gather_nd(table.numpy(), rows[batch].numpy())
        np.testing.assert_array_equal(got[batch].numpy(), expected)


# Export to ONNX ---------------------------------------------------------------------------

onnx = pytest.importorskip("onnx")


class _ScatterGather(torch.nn.Module):
    def __init__(self, reduction: str, into: bool) -> None:
        super().__init__()
        self.reduction, self.into = reduction, into

    def forward(self, data: Any, indices: Any, updates: Any) -> Any:
        if self.into:
            scatterx.scatter_nd(data, indices, updates, reduction=self.reduction, out=data)
            scattered = data
        else:
            scattered = scatterx.scatter_nd(data, indices, updates, reduction=self.reduction)
        return torch.relu(scatterx.gather_nd(scattered, indices))


def _export(model: Any, args: tuple[Any, ...], how: str) -> Any:
    names = ["data", "indices", "updates"][: len(args)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how == "torchscript":
            buffer = io.BytesIO()
            torch.onnx.export(
                model, args, buffer, dynamo=False, opset_version=18, input_names=names
            )
            return onnx.load_from_string(buffer.getvalue())
        if how == "dynamo":
            return torch.onnx.export(
                model, args, dynamo=True, input_names=names, verbose=False
            ).model_proto
        program = torch.export.export(model, args)
        table = scatterx.onnx.torch_translations()
        return torch.onnx.export(program, custom_translation_table=table, verbose=False).model_proto


@pytest.mark.parametrize("into", [False, True])
@pytest.mark.parametrize("reduction", ["none", "add", "max"])
@pytest.mark.parametrize("how", ["dynamo", "program", "torchscript"])
def test_exports_as_scatternd_and_gathernd(how: str, reduction: str, into: bool) -> None:
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    from onnx.reference import ReferenceEvaluator

    import scatterx.onnx

    indices = PAIRS if reduction != "none" else PAIRS[[0, 1, 3]]  # none: no duplicates
    args = (_table(), torch.from_numpy(indices), _updates(indices))
    model = _ScatterGather(reduction, into)
    proto = _export(model, tuple(a.clone() for a in args), how)
    onnx.checker.check_model(proto, full_check=True)
    kinds = [node.op_type for node in proto.graph.node]
    assert kinds.count("GatherND") == 1
    assert "ScatterND" in kinds
    assert len(proto.graph.input) == 3
    expected = model(*(a.clone() for a in args)).numpy()
    feeds = {i.name: a.numpy() for i, a in zip(proto.graph.input, args, strict=True)}
    sessions = (
        ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]),
        ReferenceEvaluator(proto, new_ops=scatterx.onnx.ops),
    )
    for session in sessions:
        np.testing.assert_array_equal(session.run(None, feeds)[0], expected, strict=True)


@pytest.mark.filterwarnings("ignore")
def test_torchscript_opset_too_low_says_which() -> None:
    model = _ScatterGather("max", False)
    args = (_table(), torch.from_numpy(PAIRS), _updates(PAIRS))
    with pytest.raises(Exception, match="ScatterND\\('max'\\), which needs opset 18"):
        torch.onnx.export(model, args, io.BytesIO(), dynamo=False, opset_version=17)
