"""The PyTorch adapter: CPU tensors' NumPy views, bfloat16, lazy bits, autograd, streams.

``Tensor.numpy()`` and ``torch.from_numpy`` share memory as DLPack does, and cost a small
call less (docs/performance.md, the small call); NumPy's DLPack cannot
import bfloat16, so bfloat16 goes through an int16 view; the conjugate and negative bits
are resolved first (a copy, which the route says); tensors that require grad are recorded
by autograd (:mod:`scatterx._torch.autograd`); CUDA work is ordered on torch's current stream.

Threads (contract section 13): what this module remembers is one answer per key (a route
per tensor type, torch's ``strided`` and ``from_numpy``, NumPy's bfloat16 dtype); two
threads that miss at once compute equal answers, and the route is stored once
(``dict.setdefault``), so that every thread holds the same one.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from functools import cache, cached_property
from typing import Any

import numpy as np

from .._request import Request, ScatterNDRequest, ScatterRequest
from .base import CARRIERS, NUMPY, Array, Arrays, Library, Route, type_name
from .memory import refuse_self_overlap

_EARLY: dict[type, Route] = {}  # see the module docstring: filled without a lock
#: The dtypes of indices the contract takes, as :meth:`Torch.early` asks of their views
#: (a NumPy array's dtype costs less to read than a tensor's).
_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))


class Torch(Library):
    """PyTorch tensors: see the module docstring."""

    def memory(self, array: Array) -> str | None:
        kind = array.device.type
        return kind if kind in CARRIERS else None

    @staticmethod
    def early(arrays: Arrays) -> Arrays | None:
        """The CPU tensors' NumPy views, or None (another device, a flag set, bfloat16,
        a tensor that requires grad: :mod:`scatterx._torch.autograd` takes those; indices of a
        dtype the contract refuses, so that the error names the tensor's dtype; any tensor
        under ``torch.jit.trace`` or forward-mode AD: :func:`not_early`)."""
        if not_early():
            return None
        try:
            if len(arrays) == 3:  # a scatter's, at the small call's speed
                views = arrays[0].numpy(), arrays[1].numpy(), arrays[2].numpy()
            else:
                views = tuple([a.numpy() for a in arrays])
        except (RuntimeError, TypeError):
            return None
        return views if views[1].dtype in _INDEX_DTYPES else None

    def early_route(self, kind: type) -> Route:
        route = _EARLY.get(kind)
        if route is None:
            device = _torch().device("cpu")
            route = _EARLY.setdefault(kind, Route(self, type_name(kind), device, NUMPY, None))
        return route

    def records(self, request: Request) -> bool:
        if not isinstance(request, (ScatterRequest, ScatterNDRequest)):  # a gather
            return bool(request.data.requires_grad)
        return bool(request.data.requires_grad or request.updates.requires_grad)

    def traced(self, arrays: Arrays) -> bool:
        return traced(arrays)

    def check_out(self, out: Array) -> None:
        """Refuse an ``out`` that requires grad with grad mode on (autograd would not see the
        write; under ``torch.no_grad()`` it runs, as ``p.scatter_`` does), that is sparse,
        an inference tensor outside ``inference_mode`` (as torch refuses its own in-place
        ops), or whose lazy conjugate or negative bit is set (the write would go to a
        resolved copy); and, before anything is written, one whose strides do not prove its
        elements apart (contract section 7: the rule's own ValueError, strides counted in
        elements as torch gives them; compiled, the ``*_out`` operators' fake run raises
        it)."""
        torch = _torch()
        if out.layout is not torch.strided:
            msg = f"out is a {out.layout} tensor: scatterx writes into strided tensors only"
            raise TypeError(msg)
        if out.is_inference() and not torch.is_inference_mode_enabled():
            msg = (
                "out is an inference tensor: torch allows no in-place update of one outside "
                "torch.inference_mode(); call scatterx there, or pass out.clone()"
            )
            raise RuntimeError(msg)
        if out.requires_grad and torch.is_grad_enabled():
            msg = (
                "out requires grad: autograd does not see writes into out; use the tensor the "
                "call returns, or pass out.detach() to write into its memory unrecorded"
            )
            raise TypeError(msg)
        if out.is_conj() or out.is_neg():
            msg = (
                "out has its conjugate or negative bit set (a lazy view): the result cannot be "
                "written into it; pass out.resolve_conj().resolve_neg() and use that tensor"
            )
            raise ValueError(msg)
        refuse_self_overlap(tuple(out.shape), out.stride(), 1)

    def wrote(self, out: Array) -> None:
        """Bump ``out``'s version counter, as torch's own in-place operations do: autograd
        then refuses a backward that needs the values it held before (contract section 7:
        in place as ``Tensor.scatter_`` does). The write went through a view of its memory,
        which torch does not see."""
        _torch().autograd.graph.increment_version(out)

    def refuse(self, *arrays: Array) -> None:
        strided = self._strided
        if all(array.layout is strided for array in arrays):
            return
        for role, array in zip(("data", "indices", "updates"), arrays, strict=False):
            if array.layout is not strided:
                msg = f"{role} is a {array.layout} tensor: pass {role}.to_dense()"
                raise TypeError(msg)

    @cached_property
    def _strided(self) -> Any:
        return _torch().strided

    def copies(self, request: Request) -> str | None:
        if any(a.is_conj() or a.is_neg() for a in request.arrays):
            return "resolving the conjugate or negative bit copies"
        return None

    def to_numpy(self, arrays: Arrays, dtype_key: str) -> Arrays:
        if dtype_key != "bfloat16":
            try:
                return tuple(a.numpy() for a in arrays)
            except (RuntimeError, TypeError):  # a flag set (checked here: off the fast path)
                self.refuse(*arrays)
                return tuple(_resolved(a).numpy() for a in arrays)
        self.refuse(*arrays)
        int16, bfloat16 = _torch().int16, _bfloat16()
        return tuple(
            a.numpy() if i == 1 else _resolved(a).view(int16).numpy().view(bfloat16)
            for i, a in enumerate(arrays)  # indices (the second) are integers
        )

    def to_cupy(self, arrays: Arrays, dtype_key: str) -> Arrays:
        self.refuse(*arrays)
        return super().to_cupy(tuple(_resolved(a) for a in arrays), dtype_key)

    def back(self, result: Array, like: Array, dtype_key: str) -> Array:
        if type(result) is np.ndarray and dtype_key != "bfloat16":
            return self._from_numpy(result)
        torch = _torch()
        if type(result) is not np.ndarray:  # CUDA memory
            return torch.from_dlpack(result)
        return torch.from_numpy(result.view(np.int16)).view(torch.bfloat16)

    @cached_property
    def _from_numpy(self) -> Callable[[Array], Array]:
        from_numpy: Callable[[Array], Array] = _torch().from_numpy
        return from_numpy

    def running(self, array: Array) -> contextlib.AbstractContextManager[Any]:
        if array.device.type != "cuda":
            return contextlib.nullcontext()
        return _torch_stream(array)


@contextlib.contextmanager
def _torch_stream(array: Array) -> Iterator[None]:
    """Run CuPy on the CUDA device of ``array`` and on torch's current stream there."""
    import cupy

    stream = _torch().cuda.current_stream(array.device)
    with cupy.cuda.Device(array.device.index), cupy.cuda.ExternalStream(stream.cuda_stream):
        yield


#: The error of every forward-mode derivative of a scatterx call.
NO_FORWARD_MODE = (
    "scatterx has no forward-mode derivative (torch.func.jvp, jacfwd, hessian, "
    "torch.autograd.forward_ad): use reverse mode, torch.func.jacrev, or "
    "jacrev(jacrev(f)) for a second derivative"
)
#: Set while an operator's body runs a call: nothing is traced there.
inside = threading.local()


def compiling() -> bool:
    """Whether dynamo (``torch.compile``) traces this call now (then torch's operators
    take it).

    Nothing here may make dynamo break the graph: no look at the arrays, no import, no
    write. ``torch.compiler.is_dynamo_compiling`` is true where dynamo traces and false
    everywhere else (``is_compiling`` is one flag for the whole process, true in every
    thread while one compiles). A torch that another thread is still importing has no
    ``compiler`` yet, and compiles nothing.
    """
    compiler = getattr(sys.modules.get("torch"), "compiler", None)
    return compiler is not None and bool(compiler.is_dynamo_compiling())


def is_tensor(array: Any) -> bool:
    """Whether ``array`` is a torch tensor (torch imported: asked while it compiles)."""
    return isinstance(array, sys.modules["torch"].Tensor)


def forward_mode_on() -> bool:
    """Whether a level of ``torch.autograd.forward_ad`` is open (``dual_level``): then a
    tensor may carry a tangent that its NumPy view would drop. torch has no public
    question for it; a torch without the level's name is taken as having one open."""
    forward_ad = sys.modules.get("torch.autograd.forward_ad")
    return forward_ad is not None and getattr(forward_ad, "_current_level", 0) >= 0


def not_early() -> bool:
    """Whether tensors must not be carried early to their NumPy views, which would hide
    them: from forward-mode AD (a tangent) or from ``torch.jit.trace`` (it would record
    the result as a constant). :func:`traced` looks at them instead. Asked of tensors,
    which prove torch imported whole; on the small call's path, :func:`forward_mode_on`
    inlined."""
    forward_ad = sys.modules.get("torch.autograd.forward_ad")
    if forward_ad is not None and getattr(forward_ad, "_current_level", 0) >= 0:
        return True
    return bool(sys.modules["torch"].jit.is_tracing())


def refuse_tangents(arrays: Arrays) -> None:
    """Raise the contract's error for a forward-mode derivative where one of ``arrays``
    carries a tangent (a dual tensor of ``torch.autograd.forward_ad``)."""
    torch = _torch()
    unpack = torch.autograd.forward_ad.unpack_dual  # imported by torch's own import
    if any(isinstance(a, torch.Tensor) and unpack(a).tangent is not None for a in arrays):
        raise NotImplementedError(NO_FORWARD_MODE)


def traced(arrays: Arrays) -> bool:
    """Whether torch traces a call of these tensors, so that it must go through an operator.

    Asked off the small call's path only (where a CPU tensor's ``.numpy()`` failed, or
    :func:`not_early`): fake and functional tensors (``torch.export``), ``torch.jit.trace``
    (its graph records the operator), an active ``torch.func`` transform, a dispatch mode,
    the batched gradients of ``is_grads_batched``. torch has no public question for the
    last three. Dual tensors of ``torch.autograd.forward_ad`` are refused here.
    """
    if getattr(inside, "running", False):
        return False
    if forward_mode_on():
        refuse_tangents(arrays)
    torch = _torch()
    # is_compiling and is_exporting are true in every thread while one compiles or
    # exports: another thread's eager call then runs through the operators (its result
    # the same, one step longer).
    if torch.compiler.is_compiling() or torch.compiler.is_exporting() or torch.jit.is_tracing():
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


def _resolved(array: Array) -> Array:
    """A tensor without the lazy conjugate and negative bits (a copy where one was set)."""
    if array.is_conj():
        array = array.resolve_conj()
    if array.is_neg():
        array = array.resolve_neg()
    return array


def _torch() -> Any:
    import torch

    return torch


@cache
def _bfloat16() -> np.dtype[Any]:
    import ml_dtypes

    dtype: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
    return dtype
