"""PyTorch autograd through scatterx (contract section 9): gradcheck, torch's own
gradients, determinism, double backward, no_grad and torch.compile (more of it, and
torch.export and torch.func, in test_torch_ops.py)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import scatterx
from _backends import Recorder
from _grad_cases import REDUCTIONS, GradCase, gradcheck_cases, tie_free, unique_targets

torch = pytest.importorskip("torch")

_TORCH_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


def _leaves(case: GradCase) -> tuple[Any, Any, Any]:
    data = torch.tensor(case.data, requires_grad=True)
    updates = torch.tensor(case.updates, requires_grad=True)
    return data, torch.tensor(case.indices), updates


def _scatter(indices: Any, axis: int, reduction: str) -> Any:
    def scatter(data: Any, updates: Any) -> Any:
        return scatterx.scatter_elements(data, indices, updates, axis=axis, reduction=reduction)

    return scatter


@pytest.mark.parametrize("case", gradcheck_cases(), ids=lambda case: case.name)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gradcheck(case: GradCase, reduction: str) -> None:
    data, indices, updates = _leaves(case)
    scatter = _scatter(indices, case.axis, reduction)
    assert torch.autograd.gradcheck(scatter, (data, updates))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_double_backward(reduction: str) -> None:
    data, indices, updates = _leaves(gradcheck_cases()[0])
    scatter = _scatter(indices, 0, reduction)
    assert torch.autograd.gradgradcheck(scatter, (data, updates))


@pytest.mark.parametrize("reduction", ["add", "mul", "none"])
def test_gradcheck_complex(reduction: str) -> None:
    case = gradcheck_cases()[0]
    data = torch.tensor(case.data + 1j * case.data[::-1], requires_grad=True)
    updates = torch.tensor(case.updates - 0.5j * case.updates, requires_grad=True)
    scatter = _scatter(torch.tensor(case.indices), 0, reduction)
    assert torch.autograd.gradcheck(scatter, (data, updates))


def _gradients(function: Any, data: Any, updates: Any, seed: int = 0) -> tuple[Any, Any]:
    out = function(data, updates)
    g = torch.from_numpy(np.random.default_rng(seed).normal(size=tuple(out.shape)))
    return torch.autograd.grad(out, (data, updates), g)


def _torch_scatter(indices: Any, axis: int, reduction: str) -> Any:
    if reduction == "none":
        return lambda data, updates: torch.scatter(data, axis, indices, updates)
    how = _TORCH_REDUCE[reduction]
    return lambda data, updates: torch.scatter_reduce(
        data, axis, indices, updates, how, include_self=True
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_matches_torch_scatter_reduce_where_both_are_defined(reduction: str) -> None:
    # Tie-free, zero-free; for none, no two updates share a target (torch gives every
    # duplicate the gradient, the contract only the update that wins).
    case = unique_targets() if reduction == "none" else tie_free()
    data, indices, updates = _leaves(case)
    torch_indices = torch.where(indices < 0, indices + data.shape[case.axis], indices)
    ours = _gradients(_scatter(indices, case.axis, reduction), data, updates)
    theirs = _gradients(_torch_scatter(torch_indices, case.axis, reduction), data, updates)
    for mine, reference in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, reference, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gradients_are_deterministic(reduction: str) -> None:
    rng = np.random.default_rng(11)
    data = torch.tensor(rng.normal(size=(64, 300)).astype(np.float32), requires_grad=True)
    indices = torch.tensor(rng.integers(0, 64, (4096, 300)))
    updates = torch.tensor(rng.normal(size=(4096, 300)).astype(np.float32), requires_grad=True)
    scatter = _scatter(indices, 0, reduction)
    first = _gradients(scatter, data, updates, seed=5)
    second = _gradients(scatter, data, updates, seed=5)
    for a, b in zip(first, second, strict=True):
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))


def test_three_way_tie_shares_equally() -> None:
    data = torch.tensor([2.0, 0.0], dtype=torch.float64, requires_grad=True)
    updates = torch.tensor([2.0, 1.0, 2.0, 7.0], dtype=torch.float64, requires_grad=True)
    indices = torch.tensor([0, 0, 0, 1])
    out = scatterx.scatter_elements(data, indices, updates, reduction="max")
    out.backward(torch.tensor([3.0, 5.0], dtype=torch.float64))
    assert data.grad.tolist() == [1.0, 0.0]
    assert updates.grad.tolist() == [1.0, 0.0, 1.0, 5.0]


def test_mul_zeros_have_exact_finite_gradients() -> None:
    data = torch.tensor([3.0, 2.0], dtype=torch.float64, requires_grad=True)
    updates = torch.tensor([0.0, 5.0, 0.0, 0.0], dtype=torch.float64, requires_grad=True)
    indices = torch.tensor([0, 0, 1, 1])
    out = scatterx.scatter_elements(data, indices, updates, reduction="mul")
    out.backward(torch.ones(2, dtype=torch.float64))
    assert data.grad.tolist() == [0.0, 0.0]
    assert updates.grad.tolist() == [15.0, 0.0, 0.0, 0.0]


def test_none_gives_the_winner_the_gradient() -> None:
    data = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    updates = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    out = scatterx.scatter_elements(data, torch.tensor([2, 0, 2]), updates)
    out.backward(torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64))
    assert data.grad.tolist() == [0.0, 20.0, 0.0]
    assert updates.grad.tolist() == [0.0, 10.0, 30.0]


def test_gather_gradcheck_and_determinism() -> None:
    rng = np.random.default_rng(2)
    data = torch.tensor(rng.normal(size=(5, 4)), requires_grad=True)
    indices = torch.tensor(rng.integers(-5, 5, (7, 3)))

    def gather(data: Any) -> Any:
        return scatterx.gather_elements(data, indices, axis=0)

    assert torch.autograd.gradcheck(gather, (data,))
    assert torch.autograd.gradgradcheck(gather, (data,))
    g = torch.tensor(rng.normal(size=(7, 3)))
    (ours,) = torch.autograd.grad(gather(data), data, g)
    wrapped = torch.where(indices < 0, indices + 5, indices)
    (theirs,) = torch.autograd.grad(torch.gather(data, 0, wrapped), data, g)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    (again,) = torch.autograd.grad(gather(data), data, g)
    assert torch.equal(ours.view(torch.int64), again.view(torch.int64))


def test_only_the_inputs_that_require_grad_get_one() -> None:
    data = torch.ones(4, requires_grad=True)
    out = scatterx.scatter_elements(data, torch.tensor([1]), torch.ones(1), reduction="mul")
    out.sum().backward()
    assert data.grad.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_no_grad_computes_without_recording() -> None:
    data = torch.zeros(3, requires_grad=True)
    with torch.no_grad():
        out = scatterx.scatter_elements(data, torch.tensor([1]), torch.ones(1))
        gathered = scatterx.gather_elements(data, torch.tensor([2]))
    assert out.grad_fn is None
    assert not out.requires_grad
    assert gathered.grad_fn is None
    assert out.tolist() == [0.0, 1.0, 0.0]


def test_explain_names_the_route_of_the_detached_tensors() -> None:
    data = torch.zeros(3, requires_grad=True)
    decision = scatterx.explain(data, torch.tensor([1]), torch.ones(1), backend="numpy")
    assert decision.backend == "numpy"
    assert "torch:Tensor (cpu) -> numpy:ndarray" in str(decision)


@pytest.mark.parametrize("leaf", ["tensor", "parameter"])
def test_torch_compile_keeps_scatterx_in_one_graph_without_a_warning(leaf: str) -> None:
    data = torch.randn(5, 3, requires_grad=True)
    if leaf == "parameter":  # its type's module is torch.nn.parameter: dynamo broke on it
        data = torch.nn.Parameter(data.detach())
    updates = torch.randn(2, 3, requires_grad=True)
    indices = torch.tensor([[1, 0, 4], [1, 2, 3]])

    def loss(data: Any, updates: Any) -> Any:
        scattered = scatterx.scatter_elements(data, indices, updates, reduction="mul")
        return (scatterx.gather_elements(scattered * 2, indices) ** 2).sum()

    expected = torch.autograd.grad(loss(data, updates), (data, updates))
    # The calls are torch operators (scatterx._torch.ops): no graph break, no warning.
    compiled = torch.compile(loss, backend="eager", fullgraph=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.autograd.grad(compiled(data, updates), (data, updates))
    assert not [w for w in caught if issubclass(w.category, scatterx.TorchCompileWarning)]
    for a, b in zip(got, expected, strict=True):
        assert torch.equal(a, b)


def test_the_backward_runs_on_the_backend_chosen_for_the_forward() -> None:
    from scatterx.testing import scoped_registry

    spy = Recorder()
    spy.priority = 1000  # never chosen automatically: only by name
    data = torch.ones(6, requires_grad=True)
    updates = torch.full((4,), 2.0, requires_grad=True)
    with scoped_registry(spy):
        with scatterx.use_backend("recorder"):
            out = scatterx.scatter_elements(
                data, torch.tensor([0, 0, 3, 5]), updates, reduction="mul"
            )
        forward = len(spy.requests)
        out.sum().backward()  # outside the context: the choice made for the forward holds
    assert forward == 1
    assert len(spy.requests) > forward
    assert {request.operation for request in spy.requests} == {
        "scatter_elements",
        "gather_elements",
    }
    assert updates.grad.tolist() == [2.0, 2.0, 1.0, 1.0]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_only_the_gradients_asked_for_are_computed(reduction: str) -> None:
    from scatterx.testing import scoped_registry

    case = gradcheck_cases()[0]
    counts = []
    for needs in ((True, True), (True, False), (False, True)):
        spy = Recorder()
        data = torch.tensor(case.data, requires_grad=needs[0])
        updates = torch.tensor(case.updates, requires_grad=needs[1])
        with scoped_registry(spy):
            out = _scatter(torch.tensor(case.indices), case.axis, reduction)(data, updates)
            before = len(spy.requests)
            out.sum().backward()
        counts.append(len(spy.requests) - before)
        assert (data.grad is not None, updates.grad is not None) == needs
    assert max(counts[1:]) <= counts[0]


def test_a_parameter_s_route_is_not_told_for_a_tensor_after_it() -> None:
    """Routes are remembered by the caller's array type: a Parameter's detached tensors
    are Tensors, but the route of a later plain Tensor must not name the Parameter."""
    parameter = torch.nn.Parameter(torch.zeros(3))
    scatterx.scatter_elements(parameter, torch.tensor([1]), torch.ones(1), backend="numpy")
    decision = scatterx.explain(
        torch.zeros(3, requires_grad=True), torch.tensor([1]), torch.ones(1), backend="numpy"
    )
    assert "torch:Tensor (cpu) -> numpy:ndarray" in str(decision)
    assert "Parameter" not in str(decision)
