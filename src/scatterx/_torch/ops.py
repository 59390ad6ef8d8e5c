"""PyTorch operators: ``scatterx::scatter_elements``, ``gather_elements`` and their out= forms.

Contract section 12. Where torch traces a call (``torch.compile``, ``torch.export``, the
``torch.func`` transforms, a dispatch mode), the tensors go through these operators, which
torch keeps as one node of its graph: a fake-tensor rule gives the result's shape, autograd
uses the gradients of :mod:`scatterx._gradients` (themselves made of these operators, so a
second derivative and a compiled backward work), and ``torch.func.vmap`` runs a batch as
one call along a shifted axis. Each operator's body checks its detached tensors and runs
them below the pipeline (:func:`scatterx._run.run_arrays`): the arguments of a compiled
graph's call are new at every call. The backend named by ``backend=`` travels as a string
argument; ``use_backend``, ``set_backend`` and ``SCATTERX_BACKEND`` are read when the
operator runs. The operators are defined once: as torch is imported (scatterx's
``torch.backends`` entry point, :mod:`_scatterx_autoload`), or as scatterx is imported
after torch.

Threads (contract section 13): the four operators are defined together under one lock, and
a thread that arrives meanwhile waits for all of them (:func:`define`). Where the caller's
tensors prove torch loaded, torch is imported rather than looked up in ``sys.modules``: an
import waits for one that another thread has under way, a look-up finds it half made.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from .._check import GATHER, HOSTED, SCATTER, Operation, for_operators, unhosted
from .._config import Configured, configured
from .._run import run_arrays
from ..libraries.memory import refuse_self_overlap
from ..libraries.torch import compiling, inside
from . import rules
from .export import exported
from .rules import Operators

Tensor = Any
# Set under _DEFINING, once all four operators exist; read without it on every call (a
# thread that sees False takes the lock and looks again).
_DEFINED = False
_DEFINING = threading.Lock()


def define() -> None:
    """Define the operators, all four, once. A thread that comes while another defines them
    waits for all four."""
    global _DEFINED
    if not _DEFINED:
        # Before the lock: importing torch runs scatterx's entry point, which comes here.
        import torch  # noqa: F401

        with _DEFINING:
            if not _DEFINED:
                _define()
                _DEFINED = True


def call(
    operation: Operation,
    arrays: tuple[Tensor, ...],
    axis: Any,
    reduction: Any,
    out: Any,
    backend: Any,
) -> Tensor:
    """A call of tensors that torch traces, through the operators: its arguments checked
    first as the eager call checks them, where the operators' schema would not
    (:func:`scatterx._check.for_operators`)."""
    if operation.name not in HOSTED:
        raise unhosted(operation.name, "where torch traces it (compile, export, torch.func)")
    roles = {**dict(zip(operation.roles, arrays, strict=True)), "out": out}
    axis = for_operators(roles, axis, reduction if operation is SCATTER else "none")
    ops, name = operators(), _backend_name(backend)
    if out is not None:
        _refuse_recorded_out(arrays[0], arrays[-1])

    def functional() -> Tensor:
        if operation is GATHER:
            return ops.gather(*arrays, axis, name)
        return ops.scatter(*arrays, axis, reduction, name)

    result = exported(operation, arrays, axis, reduction, out, functional)
    if result is not None:
        return result
    if operation is GATHER:
        data, indices = arrays
        if out is not None:
            ops.gather_out(data, indices, axis, name, out)
            return out
        if _transformed():
            return rules.functions().Gather.apply(data, indices, axis, name)
        return ops.gather(data, indices, axis, name)
    data, indices, updates = arrays
    if out is not None:
        ops.scatter_out(data, indices, updates, axis, reduction, name, out)
        return out
    if _transformed():
        return rules.functions().Scatter.apply(data, indices, updates, axis, reduction, name)
    return ops.scatter(data, indices, updates, axis, reduction, name)


def _transformed() -> bool:
    """Whether a ``torch.func`` transform is active (outside dynamo, which traces its own).

    The autograd of ``register_autograd`` has no ``setup_context`` for ``torch.func.grad``
    (pytorch#168393): under a transform the operators go through autograd Functions
    (:func:`scatterx._torch.rules.functions`). Dynamo reads ``is_dynamo_compiling`` as
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


def _run(
    operation: Operation,
    arrays: tuple[Tensor, ...],
    axis: int,
    reduction: Any,
    out: Any,
    backend: str | None,
) -> Any:
    """An operator's body: the eager run of its detached tensors, checked once here (the
    arguments of a compiled graph's call are new at every call), below the pipeline."""
    inside.running = True
    try:
        return run_arrays(operation, arrays, axis, reduction, out, configured(_choice(backend)))
    finally:
        inside.running = False


def operators() -> Operators:
    """The operators as ``torch.ops`` overloads, defined on first use outside dynamo."""
    if not _DEFINED:
        if compiling():  # a registration cannot be traced
            raise RuntimeError(_UNDEFINED)
        define()
    return rules.overloads()  # looked up here, which dynamo can trace


_UNDEFINED = (
    "scatterx's torch operators are not defined yet, and torch.compile cannot define them "
    "as it traces: torch defines them as it is imported, through scatterx's "
    "'torch.backends' entry point (install scatterx, and leave "
    "TORCH_DEVICE_BACKEND_AUTOLOAD at 1); importing scatterx after torch does too"
)


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
    result = _run(SCATTER, arrays, axis, reduction, out, backend)
    return result.contiguous() if out is None else None


def _gather(
    data: Tensor, indices: Tensor, axis: int, backend: str | None, out: Tensor | None = None
) -> Tensor | None:
    """The body of ``scatterx::gather_elements`` and of its ``_out`` form."""
    result = _run(GATHER, (data.detach(), indices.detach()), axis, None, out, backend)
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


def _define_if_torch_is_here() -> None:
    """Define the operators as scatterx is imported, where torch is imported already (and
    its ``torch.backends`` entry point did not run: scatterx not installed, or autoloading
    off)."""
    torch = sys.modules.get("torch")
    if getattr(torch, "library", None) is not None and not compiling():
        define()


_define_if_torch_is_here()
