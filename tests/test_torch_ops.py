"""scatterx's torch operators (contract section 12): opcheck, torch.compile, torch.export,
torch.func, double backward, and the backend choice through them.

``torch.compile`` runs with ``backend="aot_eager"`` (dynamo and AOTAutograd trace forward
and backward; no inductor code generation, which takes minutes on a small CPU machine).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

import scatterx
from _backends import Recorder
from _grad_cases import REDUCTIONS

torch = pytest.importorskip("torch")

COMPILER = "aot_eager"
#: The conformance dtypes that torch holds.
DTYPES = [key for key in scatterx.DTYPE_KEYS if isinstance(getattr(torch, key, None), torch.dtype)]
INDICES = [[1, 0, 2], [1, 2, 0], [2, 2, 1]]


@pytest.fixture(autouse=True)
def _no_warnings() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error", scatterx.TorchCompileWarning)
        yield


def _ops() -> Any:
    from scatterx._torch import ops as _torch_ops

    return _torch_ops.operators()


def _values(shape: tuple[int, ...], dtype: Any, seed: int) -> Any:
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, generator=generator).to(dtype)
    return torch.randint(0, 2 if dtype == torch.bool else 5, shape, generator=generator).to(dtype)


#: CUDA cases run where torch sees a CUDA device (tools/gpu_check.sh runs them there).
DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="torch has no CUDA"),
    ),
]


def _call(
    dtype: Any = torch.float64, grad: bool = False, device: str = "cpu"
) -> tuple[Any, Any, Any]:
    data = _values((4, 3), dtype, 0).to(device).requires_grad_(grad)
    updates = _values((3, 3), dtype, 1).to(device).requires_grad_(grad)
    return data, torch.tensor(INDICES, device=device), updates


def _reduction(dtype: Any) -> str:
    return "add" if dtype != torch.bool else "max"


@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck_scatter_and_gather_over_the_dtypes(dtype: str) -> None:
    torch_dtype = getattr(torch, dtype)
    data, indices, updates = _call(torch_dtype)
    ops = _ops()
    torch.library.opcheck(ops.scatter, (data, indices, updates, 0, _reduction(torch_dtype), None))
    torch.library.opcheck(ops.gather, (data, indices, 1, None))
    out = torch.empty_like(data)
    args = (data, indices, updates, 0, _reduction(torch_dtype), "numpy", out)
    torch.library.opcheck(ops.scatter_out, args)
    torch.library.opcheck(
        ops.gather_out, (data, indices, 0, None, torch.empty(3, 3, dtype=data.dtype))
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_opcheck_with_gradients(reduction: str) -> None:
    data, indices, updates = _call(grad=True)
    torch.library.opcheck(_ops().scatter, (data, indices, updates, -2, reduction, None))
    torch.library.opcheck(_ops().gather, (data, indices, 0, None))


def _loss(reduction: str) -> Callable[[Any, Any, Any], Any]:
    def loss(data: Any, indices: Any, updates: Any) -> Any:
        scattered = scatterx.scatter_elements(data, indices, updates, reduction=reduction)
        return (scatterx.gather_elements(scattered * 2, indices, axis=1) ** 2).sum()

    return loss


def _equal(got: Any, expected: Any) -> None:
    for a, b in zip(got, expected, strict=True):
        assert torch.equal(a, b), (a, b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_compiled_fullgraph_equals_eager_forward_and_gradients(reduction: str, device: str) -> None:
    data, indices, updates = _call(torch.float32, grad=True, device=device)
    loss = _loss(reduction)
    expected = loss(data, indices, updates)
    expected_grads = torch.autograd.grad(expected, (data, updates))
    compiled = torch.compile(loss, backend=COMPILER, fullgraph=True)
    got = compiled(data, indices, updates)
    assert torch.equal(got, expected)
    _equal(torch.autograd.grad(got, (data, updates)), expected_grads)


def test_compiled_out_and_in_place_equal_eager() -> None:
    data, indices, updates = _call()

    def into(data: Any, out: Any) -> Any:
        scatterx.scatter_elements(data, indices, updates, reduction="mul", out=out)
        scatterx.scatter_elements(data, indices, updates, reduction="add", out=data)
        return scatterx.gather_elements(out, indices, out=torch.empty(3, 3, dtype=out.dtype))

    eager_data, compiled_data = data.clone(), data.clone()
    eager_out, compiled_out = torch.empty_like(data), torch.empty_like(data)
    expected = into(eager_data, eager_out)
    got = torch.compile(into, backend=COMPILER, fullgraph=True)(compiled_data, compiled_out)
    _equal((got, compiled_out, compiled_data), (expected, eager_out, eager_data))


def test_compiled_op_runs_on_the_backend_chosen_when_it_runs() -> None:
    from scatterx.testing import scoped_registry

    spy = Recorder()
    spy.priority = 1000  # chosen by name only
    data, indices, updates = _call()
    with scoped_registry(spy):
        compiled = torch.compile(_loss("add"), backend=COMPILER, fullgraph=True)
        with scatterx.use_backend("recorder"):
            compiled(data, indices, updates)
        assert {request.operation for request in spy.requests} == {
            "scatter_elements",
            "gather_elements",
        }


def test_a_backend_named_travels_with_the_op() -> None:
    data, indices, updates = _call()
    graph = torch.export.export(_Named(indices, updates), (data,))
    assert "'numpy'" in graph.graph_module.code
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        torch.compile(
            lambda d: scatterx.scatter_elements(d, indices, updates, backend="nope"),
            backend=COMPILER,
            fullgraph=True,
        )(data)


class _Named(torch.nn.Module):  # type: ignore[misc]
    def __init__(self, indices: Any, updates: Any) -> None:
        super().__init__()
        self.indices, self.updates = indices, updates

    def forward(self, data: Any) -> Any:
        return scatterx.scatter_elements(data, self.indices, self.updates, backend=["numpy"])


class MessagePassing(torch.nn.Module):  # type: ignore[misc]
    """Each edge's message (its source's state times a weight) summed into its target."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features, features) * 0.1)

    def forward(self, state: Any, sources: Any, targets: Any) -> Any:
        messages = state[sources] @ self.weight
        summed = scatterx.scatter_elements(
            torch.zeros_like(state), targets, messages, axis=0, reduction="add"
        )
        return scatterx.gather_elements(summed, targets, axis=0).sum(dim=1)


@pytest.mark.parametrize("device", DEVICES)
def test_exported_message_passing_equals_eager(device: str) -> None:
    torch.manual_seed(0)
    nodes, edges, features = 6, 20, 4
    module = MessagePassing(features).to(device)
    state = torch.randn(nodes, features, device=device)
    sources = torch.randint(0, nodes, (edges,), device=device)
    targets = torch.randint(0, nodes, (edges, 1), device=device).expand(edges, features)
    targets = targets.contiguous()
    exported = torch.export.export(module, (state, sources, targets))
    code = exported.graph_module.code
    assert "scatterx.scatter_elements" in code
    assert "scatterx.gather_elements" in code
    other = torch.randn(nodes, features, device=device)
    assert torch.equal(exported.module()(other, sources, targets), module(other, sources, targets))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_func_grad_equals_autograd(reduction: str, device: str) -> None:
    data, indices, updates = _call(grad=True, device=device)
    loss = _loss(reduction)
    expected = torch.autograd.grad(loss(data, indices, updates), (data, updates))
    got = torch.func.grad(loss, argnums=(0, 2))(data.detach(), indices, updates.detach())
    _equal(got, expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("in_dims", [(0, None, None), (None, None, 0), (0, 0, 0), (1, None, 1)])
def test_vmap_equals_a_loop(in_dims: tuple[int | None, ...], device: str) -> None:
    data, indices, updates = (
        torch.stack([t] * 2, dim=d) if d is not None else t
        for t, d in zip(_call(device=device), in_dims, strict=True)
    )
    if in_dims[0] is not None:  # the batch's members differ
        data = data + torch.arange(2.0, device=device).reshape(
            [2 if i == in_dims[0] else 1 for i in range(3)]
        )

    def call(data: Any, indices: Any, updates: Any) -> Any:
        scattered = scatterx.scatter_elements(data, indices, updates, axis=-1, reduction="mul")
        return scattered, scatterx.gather_elements(scattered, indices, axis=0)

    got = torch.func.vmap(call, in_dims=in_dims)(data, indices, updates)
    pick = [(lambda t, d=d: lambda b: t if d is None else t.select(d, b)) for d in in_dims]
    loops = [
        call(*(p(t)(b) for p, t in zip(pick, (data, indices, updates), strict=True)))
        for b in range(2)
    ]
    _equal(got, [torch.stack(parts) for parts in zip(*loops, strict=True)])


def test_nested_vmap_and_vmap_of_grad_equal_loops() -> None:
    data, indices, updates = _call()
    batch = torch.stack([torch.stack([data + i + 2 * j for j in range(2)]) for i in range(3)])
    loss = _loss("max")

    def scatter(d: Any) -> Any:
        return scatterx.scatter_elements(d, indices, updates, reduction="min")

    nested = torch.func.vmap(torch.func.vmap(scatter))(batch)
    assert torch.equal(
        nested, torch.stack([torch.stack([scatter(d) for d in row]) for row in batch])
    )
    grads = torch.func.vmap(torch.func.grad(loss), in_dims=(0, None, None))
    got = grads(batch[0], indices, updates)
    leaves = [d.clone().requires_grad_(True) for d in batch[0]]
    expected = [torch.autograd.grad(loss(d, indices, updates), d)[0] for d in leaves]
    assert torch.equal(got, torch.stack(expected))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_vmap_of_jacrev_equals_a_loop(reduction: str, axis: int) -> None:
    """mul's gradient moved an axis with torch's moveaxis, which vmap had no rule for."""
    indices = torch.tensor([[0, 1, 2, 0], [2, 0, 1, 1]])
    if axis != 0:
        indices = torch.tensor([[0, 3], [1, 1], [2, 0]])

    def scatter(u: Any) -> Any:
        data = torch.full((3, 4), 1.5, dtype=torch.float64)
        return scatterx.scatter_elements(data, indices, u, axis=axis, reduction=reduction)

    batch = torch.randn(
        2, *indices.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    got = torch.func.vmap(torch.func.jacrev(scatter))(batch)
    assert torch.equal(got, torch.stack([torch.func.jacrev(scatter)(u) for u in batch]))


@pytest.mark.parametrize("reduction", [*REDUCTIONS, "gather"])
def test_vectorized_jacobians_equal_the_loop_of_rows(reduction: str) -> None:
    """torch.autograd.functional.jacobian(vectorize=True) batches the gradients with
    torch's older vmap (``is_grads_batched``); the backward's calls went to DLPack and
    failed, blaming it."""
    indices = torch.tensor([[0, 1, 2, 0], [2, 0, 1, 1]])
    ones = torch.ones(3, 4, dtype=torch.float64)

    def call(values: Any) -> Any:
        if reduction == "gather":
            return scatterx.gather_elements(values, indices)
        return scatterx.scatter_elements(ones * 1.5, indices, values, reduction=reduction)

    values = torch.randn(*(ones if reduction == "gather" else indices).shape, dtype=ones.dtype)
    jacobian = torch.autograd.functional.jacobian
    assert torch.equal(jacobian(call, values, vectorize=True), jacobian(call, values))


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
@pytest.mark.parametrize("call", ["scatter", "gather"])
def test_jit_trace_records_the_operator_not_the_result(call: str) -> None:
    """torch.jit.trace recorded the first result as a constant: the traced function gave
    it again for other inputs."""
    indices = torch.tensor([[0, 1, 2, 0]])

    def f(data: Any, updates: Any) -> Any:
        if call == "gather":
            return scatterx.gather_elements(data + updates.sum(), indices)
        return scatterx.scatter_elements(data, indices, updates, reduction="add")

    traced = torch.jit.trace(f, (torch.zeros(3, 4), torch.ones(1, 4)))
    data, updates = torch.arange(12.0).reshape(3, 4), torch.full((1, 4), 2.0)
    assert torch.equal(traced(data, updates), f(data, updates))


_BAD_ARGUMENTS = {
    "axis True": (TypeError, "axis must be an int, got bool", {"axis": True}),
    "axis 1.0": (TypeError, "axis must be an int, got float", {"axis": 1.0}),
    "reduction None": (ValueError, "reduction must be one of", {"reduction": None}),
    "NumPy indices": (TypeError, "must come from one array library", {"indices": "numpy"}),
    "list indices": (TypeError, "must come from one array library", {"indices": "list"}),
}


@pytest.mark.parametrize("how", ["compile", "grad", "vmap"])
@pytest.mark.parametrize("bad", list(_BAD_ARGUMENTS))
def test_transforms_raise_the_eager_calls_errors(bad: str, how: str) -> None:
    """The operators' schema took True as 1 and a NumPy array beside tensors, and made
    its own errors of the rest; the transforms now check as the eager call does."""
    error, match, change = _BAD_ARGUMENTS[bad]
    data, indices, updates = _call()
    kwargs = {k: v for k, v in change.items() if k != "indices"}
    if change.get("indices") == "numpy":
        indices = indices.numpy()
    elif change.get("indices") == "list":
        indices = indices.tolist()

    def scatter(u: Any) -> Any:
        return scatterx.scatter_elements(data, indices, u, **kwargs).sum()

    transformed = {
        "compile": torch.compile(scatter, backend="aot_eager"),  # a graph break: eager raises
        "grad": torch.func.grad(scatter),
        "vmap": torch.func.vmap(scatter),
    }[how]
    with pytest.raises(error, match=match):
        transformed(updates[None] if how == "vmap" else updates)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_double_backward_through_the_op(reduction: str) -> None:
    data, indices, updates = _call(grad=True)
    ops = _ops()
    if reduction in ("max", "min"):  # away from ties, where the gradient jumps
        updates = (updates.detach() + torch.arange(9.0).reshape(3, 3)).requires_grad_(True)

    def call(data: Any, updates: Any) -> Any:
        return ops.gather(
            ops.scatter(data, indices, updates, 0, reduction, None) ** 2, indices, 1, None
        )

    assert torch.autograd.gradgradcheck(call, (data, updates))

    def through_the_front(updates: Any) -> Any:  # torch.func: the front-end's Functions
        scattered = scatterx.scatter_elements(data.detach(), indices, updates, reduction=reduction)
        return (scatterx.gather_elements(scattered**2, indices, axis=1)).sum()

    hessian = torch.func.jacrev(torch.func.jacrev(through_the_front))(updates.detach())
    second = [
        torch.autograd.grad(row, updates, retain_graph=True)[0]
        for row in torch.autograd.grad(through_the_front(updates), updates, create_graph=True)[
            0
        ].flatten()
    ]
    assert torch.equal(hessian.reshape(9, 3, 3), torch.stack(second))


def test_out_is_refused_where_a_transform_records_or_batches_it() -> None:
    data, indices, updates = _call()

    def into(d: Any) -> Any:
        return scatterx.scatter_elements(d, indices, updates, out=torch.empty_like(d))

    with pytest.raises(TypeError, match=r"torch\.func\.grad"):
        torch.func.grad(lambda d: into(d).sum())(data)
    with pytest.raises(RuntimeError, match=r"torch\.func\.vmap.*call without out="):
        torch.func.vmap(into)(torch.stack([data, data]))


def test_the_small_eager_call_does_not_go_through_the_op(monkeypatch: pytest.MonkeyPatch) -> None:
    from scatterx._torch import ops as _torch_ops

    def refused(*args: Any) -> Any:
        msg = "the op was called"
        raise AssertionError(msg)

    monkeypatch.setattr(_torch_ops, "call", refused)
    data, indices, updates = _call()
    scattered = scatterx.scatter_elements(data, indices, updates)
    assert scatterx.gather_elements(scattered, indices).shape == (3, 3)
    data.requires_grad_(True)
    scatterx.scatter_elements(data, indices, updates).sum().backward()  # the eager autograd


def test_forward_mode_names_the_transform_and_the_way_out() -> None:
    data, indices, updates = _call()

    def scatter(d: Any) -> Any:
        return scatterx.scatter_elements(d, indices, updates, reduction="add")

    with pytest.raises(NotImplementedError, match=r"forward-mode.*jacrev"):
        torch.func.jvp(scatter, (data,), (torch.ones_like(data),))


def _dual_call(call: str, data: Any, indices: Any, dual: Any) -> None:
    if call == "gather":
        scatterx.gather_elements(dual, indices)
    elif call == "scatter":
        scatterx.scatter_elements(data, indices, dual, reduction="add")
    else:
        with torch.no_grad():
            scatterx.scatter_elements(data, indices, dual, out=torch.zeros_like(data))


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("call", ["scatter", "gather", "scatter out"])
def test_dual_tensors_of_forward_ad_are_refused_not_stripped(
    call: str, requires_grad: bool
) -> None:
    """A tangent was dropped silently: the dual tensor's NumPy view has none."""
    import torch.autograd.forward_ad as fwad

    data, indices, updates = _call()
    updates.requires_grad_(requires_grad)
    with fwad.dual_level():
        dual = fwad.make_dual(updates, torch.ones_like(updates))
        scatterx.scatter_elements(data, indices, updates)  # no tangent anywhere: it runs
        with pytest.raises(NotImplementedError, match=r"forward-mode.*forward_ad.*jacrev"):
            _dual_call(call, data, indices, dual)


_IMPORTS = {
    "torch": "import torch, scatterx",
    "scatterx": "import scatterx, torch",
    # A look for torch's spec that imports nothing, then the import: scatterx saw the look
    # and missed the import.
    "scatterx, find_spec": "import importlib.util, scatterx\n"
    "importlib.util.find_spec('torch')\nimport torch",
}


@pytest.mark.parametrize("first", list(_IMPORTS))
def test_a_compiled_call_can_be_the_first_call_whatever_the_import_order(first: str) -> None:
    from _subprocess import run_python

    imports = _IMPORTS[first]
    code = f"""
{imports}
def f(d, i, u):
    return scatterx.scatter_elements(d, i, u, reduction="add", backend="numpy")
d, i, u = torch.zeros(4, 3), torch.tensor([[1, 0, 3]]), torch.ones(1, 3)
print(torch.compile(f, backend="aot_eager", fullgraph=True)(d, i, u).sum().item())
"""
    assert run_python(code).split()[-1] == "3.0"


def test_vmap_refuses_an_axis_out_of_the_callers_range() -> None:
    data, indices, updates = _call()
    batch = torch.stack([data, data])
    for axis in (2, -3):  # on the batched tensors, -3 would be valid: it must not be taken

        def scatter(d: Any, axis: int = axis) -> Any:
            return scatterx.scatter_elements(d, indices, updates, axis=axis)

        with pytest.raises(ValueError, match=rf"axis must be in \[-2, 1\].*got axis={axis}"):
            torch.func.vmap(scatter)(batch)
