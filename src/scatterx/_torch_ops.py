"""PyTorch operators: ``scatterx::scatter_elements``, ``gather_elements`` and their out= forms.

Contract section 12. Where torch traces a call (``torch.compile``, ``torch.export``, the
``torch.func`` transforms, a dispatch mode), the tensors go through these operators, which
torch keeps as one node of its graph: a fake-tensor rule gives the result's shape, autograd
uses the gradients of :mod:`scatterx._grad` (themselves made of these operators, so a
second derivative and a compiled backward work), and ``torch.func.vmap`` runs a batch as
one call along a shifted axis. Each operator's run is the pipeline's eager run on the
detached tensors (the pipeline hands its functions over with :func:`serve`, so this module
imports nothing above it), and the backend named by ``backend=`` travels as a string
argument; ``use_backend``, ``set_backend`` and ``SCATTERX_BACKEND`` are read when the
operator runs. The operators are defined once, when scatterx first meets torch.

Threads (contract section 13): the four operators are defined together under one lock, and
a thread that arrives meanwhile waits for all of them (:func:`_defining`). Where the caller's
tensors prove torch loaded, torch is imported rather than looked up in ``sys.modules``: an
import waits for one that another thread has under way, a look-up finds it half made.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from . import _torch_op_rules as rules
from ._config import Configured
from ._overlap import refuse_self_overlap
from ._torch_op_rules import Operators

Tensor = Any
# Filled once, as _pipeline is imported (under the import lock), before any call can read it.
_served: dict[str, Callable[..., Any]] = {}
_inside = threading.local()  # set while an operator runs the pipeline: nothing is traced there
# Set under _DEFINING, once all four operators exist; read without it on every call (a
# thread that sees False takes the lock and looks again).
_DEFINED = False
_DEFINING = threading.Lock()


def serve(scatter: Callable[..., Any], gather: Callable[..., Any]) -> None:
    """Take the pipeline's ``scatter`` and ``gather``: what the operators run; and have
    ``torch.compile`` define the operators when it first meets a call."""
    _served["scatter"], _served["gather"] = scatter, gather
    if "torch" in sys.modules:
        _mark(sys.modules["torch"])
    else:
        # Another thread's import that walks sys.meta_path now may ask a finder twice;
        # each answers the same again.
        sys.meta_path.insert(0, _TorchWatcher())


def _defining() -> bool:
    """Define the operators, all four, once; dynamo runs this as it traces (see
    :func:`_mark`). A thread that comes while another defines them waits for all four."""
    global _DEFINED
    if not _DEFINED:
        with _DEFINING:
            if not _DEFINED:
                _define()
                _DEFINED = True
    return True


def compiling() -> bool:
    """Whether dynamo (``torch.compile``) is tracing this call now (then torch's operators
    take it).

    Nothing here may make dynamo break the graph: no look at the arrays, no import, no
    write. ``torch.compiler.is_dynamo_compiling``, which dynamo reads as true where it
    traces and which is false everywhere else: ``is_compiling`` is one flag for the whole
    process, true in every thread while one compiles, and an eager call of another thread
    then went to the operators, whose run came back here, to a RecursionError. Once torch
    is imported (seen by :func:`serve` or :class:`_TorchWatcher`), this name is torch's
    function itself, one call less on every call; until then (and where torch came in
    unseen) torch is looked for in ``sys.modules``. Nothing tells there that the caller
    has tensors: a torch that another thread is still importing has no ``compiler`` yet,
    and compiles nothing.
    """
    torch = sys.modules.get("torch")
    compiler = getattr(torch, "compiler", None)
    return compiler is not None and bool(compiler.is_dynamo_compiling())


def jit_tracing() -> bool:
    """Whether ``torch.jit.trace`` is tracing (asked of tensors); torch's own question once
    :func:`_mark` has seen torch (one call less on the small call's path)."""
    return bool(_torch().jit.is_tracing())


def _torch() -> Any:
    """torch, imported: where the caller's tensors prove it loaded, an import that another
    thread has under way is waited for (``sys.modules`` would give it half made)."""
    import torch

    return torch


def _mark(torch: Any) -> None:
    """Have dynamo run :func:`_defining` rather than trace it (a registration cannot be
    traced), so that a compiled function's first call can define the operators; and make
    :func:`compiling` and :func:`jit_tracing` torch's own questions.

    Run by :func:`serve` or by :class:`_TorchWatcher` once torch's import is complete; a
    thread that calls :func:`compiling` meanwhile gets the same answer from either name.
    """
    global compiling, jit_tracing
    torch.compiler.assume_constant_result(_defining)
    compiling = torch.compiler.is_dynamo_compiling
    jit_tracing = torch.jit.is_tracing


class _TorchWatcher(importlib.abc.MetaPathFinder):
    """Marks :func:`_defining` when torch is imported after scatterx.

    It stays in ``sys.meta_path``, answering None for every other name: taking it out
    would shift the list under another thread's import walking it, which then skips the
    finder after it; and a look for torch's spec that imports nothing
    (``importlib.util.find_spec``) would have used it up. The import machinery holds its
    global lock around each ``find_spec``, so ``asking`` (set while it asks the finders
    after it, itself included) is read and set by one thread at a time.
    """

    asking = False

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "torch" or self.asking:
            return None
        self.asking = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.asking = False
        if spec is None or spec.loader is None:
            return spec
        loader, run = spec.loader, spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            _mark(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def is_tensor(array: Any) -> bool:
    """Whether ``array`` is a torch tensor (torch imported: asked while it compiles)."""
    return isinstance(array, sys.modules["torch"].Tensor)


def not_early() -> bool:
    """Whether tensors must not be carried early to their NumPy views, which would hide
    them: from ``torch.autograd.forward_ad`` (a tangent) or from ``torch.jit.trace`` (it
    would record the result as a constant). :func:`traced` looks at them instead. On the
    small call's path: :func:`forward_mode_on` inlined."""
    forward_ad = sys.modules.get("torch.autograd.forward_ad")
    if forward_ad is not None and getattr(forward_ad, "_current_level", 0) >= 0:
        return True
    return bool(jit_tracing())


def forward_mode_on() -> bool:
    """Whether a level of ``torch.autograd.forward_ad`` is open (``dual_level``): then a
    tensor may carry a tangent that its NumPy view would drop. torch has no public
    question for it; a torch without the level's name is taken as having one open (so is
    a module that another thread is still importing: :func:`refuse_tangents` imports it,
    which waits for it)."""
    forward_ad = sys.modules.get("torch.autograd.forward_ad")
    return forward_ad is not None and getattr(forward_ad, "_current_level", 0) >= 0


def refuse_tangents(arrays: Sequence[Tensor]) -> None:
    """Raise the contract's error for a forward-mode derivative where one of ``arrays``
    carries a tangent (a dual tensor of ``torch.autograd.forward_ad``)."""
    torch = _torch()
    unpack = torch.autograd.forward_ad.unpack_dual  # imported by torch's own import
    if any(isinstance(a, torch.Tensor) and unpack(a).tangent is not None for a in arrays):
        raise NotImplementedError(rules.NO_FORWARD_MODE)


def traced(arrays: Sequence[Tensor]) -> bool:
    """Whether torch traces a call of these tensors, so that it must go through an operator.

    Asked off the small call's path only (where a CPU tensor's ``.numpy()`` failed, or
    :func:`not_early`): fake and functional tensors (``torch.export``), ``torch.jit.trace``
    (its graph records the operator), an active ``torch.func`` transform, a dispatch mode,
    the batched gradients of ``is_grads_batched``. torch has no public question for the
    last three. Dual tensors of ``torch.autograd.forward_ad`` are refused here
    (:func:`refuse_tangents`).
    """
    if getattr(_inside, "running", False):
        return False
    if forward_mode_on():
        refuse_tangents(arrays)
    torch = _torch()
    # is_compiling and is_exporting are true in every thread while one compiles or
    # exports: another thread's eager call then runs through the operators (its result
    # the same, one step longer).
    if torch.compiler.is_compiling() or torch.compiler.is_exporting() or jit_tracing():
        return True
    if any(isinstance(a, _tracing_types()) for a in arrays):
        return True
    functorch = torch._C._functorch
    if functorch.maybe_current_level() is not None or torch._C._len_torch_dispatch_stack() > 0:
        return True
    # The batched gradients of torch.autograd.grad(is_grads_batched=True) (jacobian and
    # hessian with vectorize=True): torch's older vmap, which runs the operators too.
    legacy = getattr(functorch, "is_legacy_batchedtensor", None)
    return legacy is not None and any(isinstance(a, torch.Tensor) and legacy(a) for a in arrays)


@cache  # two threads that miss at once import the same two classes
def _tracing_types() -> tuple[type, ...]:
    from torch._subclasses.fake_tensor import FakeTensor
    from torch._subclasses.functional_tensor import FunctionalTensor

    return (FakeTensor, FunctionalTensor)


def scatter(
    data: Tensor,
    indices: Tensor,
    updates: Tensor,
    axis: Any,
    reduction: Any,
    out: Any,
    backend: Any,
) -> Tensor:
    """:func:`scatterx.scatter_elements` of tensors, through the operators; ``axis`` and
    ``reduction`` checked (``_validate.for_operators``)."""
    ops, name = operators(), _backend_name(backend)
    if out is None:
        if _transformed():
            return rules.functions().Scatter.apply(data, indices, updates, axis, reduction, name)
        return ops.scatter(data, indices, updates, axis, reduction, name)
    _refuse_recorded_out(data, updates)
    ops.scatter_out(data, indices, updates, axis, reduction, name, out)
    return out


def gather(data: Tensor, indices: Tensor, axis: Any, out: Any, backend: Any) -> Tensor:
    """:func:`scatterx.gather_elements` of tensors, through the operators; ``axis``
    checked (``_validate.for_operators``)."""
    ops, name = operators(), _backend_name(backend)
    if out is None:
        if _transformed():
            return rules.functions().Gather.apply(data, indices, axis, name)
        return ops.gather(data, indices, axis, name)
    _refuse_recorded_out(data, data)
    ops.gather_out(data, indices, axis, name, out)
    return out


def _transformed() -> bool:
    """Whether a ``torch.func`` transform is active (outside dynamo, which traces its own).

    The autograd of ``register_autograd`` has no ``setup_context`` for ``torch.func.grad``
    (pytorch#168393): under a transform the operators go through autograd Functions
    (:func:`scatterx._torch_op_rules.functions`). Dynamo reads ``is_dynamo_compiling`` as
    true; elsewhere it is false, in every thread (see :func:`compiling`).
    """
    torch = sys.modules["torch"]  # operators() has imported it
    if torch.compiler.is_dynamo_compiling():
        return False
    return torch._C._functorch.maybe_current_level() is not None


def _backend_name(backend: Any) -> str | None:
    """``backend=`` as the operators' string argument: names joined by commas."""
    if backend is None or isinstance(backend, str):
        return backend
    if isinstance(backend, Configured):
        return None if backend.names is None else ",".join(backend.names)
    return ",".join(backend)


def _choice(name: str | None) -> tuple[str, ...] | None:
    return None if name is None else tuple(name.split(","))


def _refuse_recorded_out(data: Tensor, updates: Tensor) -> None:
    import torch

    if torch.is_grad_enabled() and (data.requires_grad or updates.requires_grad):
        msg = (
            "out= cannot be used where autograd records the call (a tensor requires grad "
            "and grad mode is on, or torch.func.grad transforms it): autograd does not see "
            "writes into out; use the tensor the call returns, or call under torch.no_grad()"
        )
        raise TypeError(msg)


def _run(function: str, *arguments: Any) -> Any:
    """The pipeline's eager run of an operator's (detached) tensors."""
    _inside.running = True
    try:
        return _served[function](*arguments)
    finally:
        _inside.running = False


def operators() -> Operators:
    """The operators as ``torch.ops`` overloads, defined on first use."""
    _defining()  # under torch.compile, run by dynamo rather than traced
    return rules.overloads()  # looked up here, which dynamo can trace


# The schemas written out: this module's annotations are strings, which torch cannot read.
_SCATTER = "(Tensor data, Tensor indices, Tensor updates, int axis, str reduction, str? backend)"
_GATHER = "(Tensor data, Tensor indices, int axis, str? backend)"
_SCATTER_OUT = f"{_SCATTER[:-1]}, Tensor(a!) out) -> ()"
_GATHER_OUT = f"{_GATHER[:-1]}, Tensor(a!) out) -> ()"
_SCATTER += " -> Tensor"
_GATHER += " -> Tensor"


def _scatter(
    data: Tensor,
    indices: Tensor,
    updates: Tensor,
    axis: int,
    reduction: str,
    backend: str | None,
    out: Tensor | None = None,
) -> Tensor | None:
    """The body of ``scatterx::scatter_elements`` (a new tensor) and of its ``_out`` form
    (``out`` written, nothing returned): the pipeline's run on the detached tensors."""
    arrays = (data.detach(), indices.detach(), updates.detach())
    result = _run("scatter", *arrays, axis, reduction, out, _choice(backend))
    return result.contiguous() if out is None else None


def _gather(
    data: Tensor, indices: Tensor, axis: int, backend: str | None, out: Tensor | None = None
) -> Tensor | None:
    """The body of ``scatterx::gather_elements`` and of its ``_out`` form."""
    result = _run("gather", data.detach(), indices.detach(), axis, out, _choice(backend))
    return result.contiguous() if out is None else None


_NAMES = ("scatter_elements", "gather_elements", "scatter_elements_out", "gather_elements_out")


def _define() -> None:
    """Define the four operators (under :data:`_DEFINING`, once)."""
    import torch

    library = "scatterx"
    if all(hasattr(torch.ops.scatterx, name) for name in _NAMES):
        return  # defined already (a reloaded module)

    define = torch.library.custom_op
    scatter_elements = define(
        f"{library}::scatter_elements", _scatter, mutates_args=(), schema=_SCATTER
    )
    gather_elements = define(
        f"{library}::gather_elements", _gather, mutates_args=(), schema=_GATHER
    )
    out = ("out",)
    scatter_elements_out = define(
        f"{library}::scatter_elements_out", _scatter, mutates_args=out, schema=_SCATTER_OUT
    )
    gather_elements_out = define(
        f"{library}::gather_elements_out", _gather, mutates_args=out, schema=_GATHER_OUT
    )

    @scatter_elements.register_fake
    def _(data: Tensor, indices: Tensor, updates: Tensor, *rest: Any) -> Tensor:
        return data.new_empty(data.shape)

    @gather_elements.register_fake
    def _(data: Tensor, indices: Tensor, *rest: Any) -> Tensor:
        return data.new_empty(indices.shape)

    # Where dynamo (or export) traces a write into out, the rule of contract section 7 on
    # its fake strides: the eager call's ValueError, before AOTAutograd meets the layout.
    @scatter_elements_out.register_fake
    @gather_elements_out.register_fake
    def _(*arguments: Any) -> None:
        out = arguments[-1]
        refuse_self_overlap(tuple(out.shape), tuple(out.stride()), 1)

    scatter_elements.register_autograd(rules.scatter_backward, setup_context=rules.scatter_context)
    gather_elements.register_autograd(rules.gather_backward, setup_context=rules.gather_context)
    scatter_elements.register_vmap(rules.scatter_vmap)
    gather_elements.register_vmap(rules.gather_vmap)
    scatter_elements_out.register_vmap(rules.refuse_out_vmap)
    gather_elements_out.register_vmap(rules.refuse_out_vmap)
