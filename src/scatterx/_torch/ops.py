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

from .._check import GATHER_ND, OPERATIONS, SCATTER_ND, Operation, for_operators
from .._config import Configured, configured
from .._run import run_arrays
from ..libraries.memory import refuse_self_overlap
from ..libraries.torch import compiling, inside
from . import rules
from .checks import result_shape
from .export import exported
from .rules import FIELDS, FUNCTIONS, Operators

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
    (:func:`scatterx._check.for_operators`). ``axis``: the operation's integer argument
    (``batch_dims`` of a GatherND, None for a ScatterND)."""
    roles = {**dict(zip(operation.roles, arrays, strict=True)), "out": out}
    axis = for_operators(operation, roles, axis, reduction if operation.reduces else "none")
    ops, name = operators(), _backend_name(backend)
    functional_name, out_name = FIELDS[operation.name]
    arguments = (*arrays, *settings(operation, axis, reduction), name)
    if out is not None:
        _refuse_recorded_out(arrays[0], arrays[-1])

    def functional() -> Tensor:
        return getattr(ops, functional_name)(*arguments)

    result = exported(operation, arrays, axis, reduction, out, functional)
    if result is not None:
        return result
    if out is not None:
        getattr(ops, out_name)(*arguments, out)
        return out
    if _transformed():
        return getattr(rules.functions(), FUNCTIONS[operation.name]).apply(*arguments)
    return functional()


def settings(operation: Operation, axis: Any, reduction: Any) -> tuple[Any, ...]:
    """The operators' arguments after the tensors, but for the backend: ``axis`` (or
    ``batch_dims``) where the operation takes it, then the reduction where it reduces."""
    taken = (axis,) if operation is not SCATTER_ND else ()
    return (*taken, reduction) if operation.reduces else taken


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
_SCHEMAS = {
    "scatter_elements": "Tensor data, Tensor indices, Tensor updates, int axis, str reduction",
    "gather_elements": "Tensor data, Tensor indices, int axis",
    "scatter_nd": "Tensor data, Tensor indices, Tensor updates, str reduction",
    "gather_nd": "Tensor data, Tensor indices, int batch_dims",
}


def _body(operation: Operation) -> Any:
    """The body of the operation's operator (a new tensor) and of its ``_out`` form
    (``out`` written, nothing returned): the run of the detached tensors below the
    pipeline, the arguments in the schema's order."""
    count = len(operation.roles)

    def body(*arguments: Any) -> Tensor | None:
        arrays = tuple(array.detach() for array in arguments[:count])
        *taken, backend = arguments[count : count + len(_SETTINGS[operation.name]) + 1]
        out = arguments[-1] if len(arguments) > count + len(taken) + 1 else None
        axis, reduction = _unpacked(operation, taken)
        result = _run(operation, arrays, axis, reduction, out, backend)
        return result.contiguous() if out is None else None

    return body


#: The names of each operation's settings in its schema.
_SETTINGS = {
    name: tuple(part.split()[1] for part in schema.split(", ") if not part.startswith("Tensor"))
    for name, schema in _SCHEMAS.items()
}


def _unpacked(operation: Operation, taken: list[Any]) -> tuple[Any, Any]:
    """``(axis, reduction)`` of the pipeline from an operator's settings."""
    axis = None if operation is SCATTER_ND else taken[0]
    return axis, (taken[-1] if operation.reduces else None)


def _fake(operation: Operation) -> Any:
    """The fake-tensor rule of the operation's operator: an empty result of its shape."""

    def fake(*arguments: Any) -> Tensor:
        count = len(operation.roles)
        shapes = tuple(tuple(array.shape) for array in arguments[:count])
        argument = arguments[count] if operation is GATHER_ND else None
        return arguments[0].new_empty(result_shape(operation, shapes, argument))

    return fake


def _fake_out(*arguments: Any) -> None:
    """Where dynamo (or export) traces a write into out, the rule of contract section 7 on
    its fake strides: the eager call's ValueError, before AOTAutograd meets the layout."""
    out = arguments[-1]
    refuse_self_overlap(tuple(out.shape), tuple(out.stride()), 1)


def _define() -> None:
    """Define the operators, two of each operation (under :data:`_DEFINING`, once)."""
    import torch

    names = [f"{name}{suffix}" for name in OPERATIONS for suffix in ("", "_out")]
    if all(hasattr(torch.ops.scatterx, name) for name in names):
        return  # defined already (a reloaded module)
    for name, operation in OPERATIONS.items():
        schema = f"({_SCHEMAS[name]}, str? backend)"
        functional = torch.library.custom_op(
            f"scatterx::{name}", _body(operation), mutates_args=(), schema=f"{schema} -> Tensor"
        )
        into = torch.library.custom_op(
            f"scatterx::{name}_out",
            _body(operation),
            mutates_args=("out",),
            schema=f"{schema[:-1]}, Tensor(a!) out) -> ()",
        )
        functional.register_fake(_fake(operation))
        into.register_fake(_fake_out)
        context, backward, vmap = rules.RULES[name]
        functional.register_autograd(backward, setup_context=context)
        functional.register_vmap(vmap)
        into.register_vmap(rules.refuse_out_vmap)


def _define_if_torch_is_here() -> None:
    """Define the operators as scatterx is imported, where torch is imported already (and
    its ``torch.backends`` entry point did not run: scatterx not installed, or autoloading
    off)."""
    torch = sys.modules.get("torch")
    if getattr(torch, "library", None) is not None and not compiling():
        define()


_define_if_torch_is_here()
