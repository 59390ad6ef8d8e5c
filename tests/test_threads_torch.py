"""torch's first use from eight threads at once (contract section 13, issue 42 item 1).

The first call on tensors defines scatterx's torch operators, and the autograd Functions
of tensors that require grad and of the ``torch.func`` transforms. Threads released
together found the operators half defined (``'_OpNamespace' 'scatterx' object has no
attribute 'gather_elements'``); threads calling while another compiled took torch's
process-wide "compiling" flag for their own; threads calling while another imported torch
read a half-imported torch. Every round is a new interpreter (:mod:`_threads`), whose
harness imports scatterx before torch.
"""

from __future__ import annotations

import pytest

from _threads import first_use_in_threads

pytest.importorskip("torch")

#: The calls on tensors, each result checked bitwise against the oracle's (``check``).
#: ``plain`` calls both functions; thread ``n`` then takes way ``n % 4`` as well.
_TENSOR_CALLS = """
WAYS = ("plain", "grad", "vmap", "out")


def scatter(data, indices, updates, case, **kwargs):
    return scatterx.scatter_elements(
        data, indices, updates, axis=case.axis, reduction=case.reduction, **kwargs
    )


def gather(data, indices, case, **kwargs):
    return scatterx.gather_elements(data, indices, axis=case.axis, **kwargs)


def tensors(case):
    import torch  # here: a round imports torch from a thread

    return tuple(torch.from_numpy(a.copy()) for a in (case.data, case.indices, case.updates))


def plain(thread, case):
    data, indices, updates = tensors(case)
    if thread % 2:  # half the threads gather first
        check(gather(data, indices, case), case.gathered)
    check(scatter(data, indices, updates, case), case.scattered)
    check(gather(data, indices, case), case.gathered)


def tensor_first_use(thread, case):
    import torch

    plain(thread, case)
    data, indices, updates = tensors(case)
    way = WAYS[thread % len(WAYS)]
    if way == "grad" and data.dtype.is_floating_point:
        data.requires_grad_(True)
        check(scatter(data, indices, updates, case).detach(), case.scattered)
        gathered = gather(data, indices, case)
        check(gathered.detach(), case.gathered)
        gathered.sum().backward()
        hits = reference_scatter_elements(
            np.zeros_like(case.data), case.indices, np.ones_like(case.updates), case.axis, "add"
        )
        check(data.grad, hits)
    elif way == "vmap":
        batched = torch.func.vmap(lambda d: scatter(d, indices, updates, case))(data[None])
        check(batched[0], case.scattered)
        check(torch.func.vmap(lambda d: gather(d, indices, case))(data[None])[0], case.gathered)
    elif way == "out":
        out = torch.empty_like(data)
        assert scatter(data, indices, updates, case, out=out) is out
        check(out, case.scattered)
        out = torch.empty(indices.shape, dtype=data.dtype)
        check(gather(data, indices, case, out=out), case.gathered)
"""


def test_the_first_calls_on_tensors_from_eight_threads() -> None:
    first_use_in_threads(
        f"import torch\nimport scatterx\n{_TENSOR_CALLS}\nfirst_use = tensor_first_use\n"
    )


#: Thread 0 compiles the calls of two of its cases (two compiles); the others call eagerly
#: until it is done, waiting a millisecond between calls (``Event.wait``), which leaves the
#: compiling thread its share of the interpreter.
_WHILE_COMPILING = """
import threading
import torch
import scatterx

compiled_all = threading.Event()


def both(data, indices, updates, axis, reduction):
    scattered = scatterx.scatter_elements(data, indices, updates, axis=axis, reduction=reduction)
    return scattered, scatterx.gather_elements(data, indices, axis=axis)


def first_use(thread, case):
    if thread == 0:
        try:
            for one in CASES[0][:2]:
                compiled = torch.compile(both, backend="eager", fullgraph=True)
                scattered, gathered = compiled(*tensors(one), one.axis, one.reduction)
                check(scattered, one.scattered)
                check(gathered, one.gathered)
        finally:
            compiled_all.set()
        return
    tensor_first_use(thread, case)
    while not compiled_all.wait(0.001):
        tensor_first_use(thread, case)
"""


def test_eager_calls_while_another_thread_compiles() -> None:
    """torch's ``is_compiling()`` is true in every thread while one compiles: an eager
    call took the operators' path, and the operator's run took it again, to a
    RecursionError."""
    first_use_in_threads(_WHILE_COMPILING + _TENSOR_CALLS)


#: Thread 0 imports torch while the others call scatterx on arrays that are not exactly
#: NumPy's (an ndarray subclass), asking whether torch compiles while torch is half
#: imported (a millisecond between calls, the import's share of the interpreter); then
#: every thread calls on tensors.
_TORCH_COMES_IN = """
import threading
import scatterx

torch_imported = threading.Event()


class Subclass(np.ndarray):
    pass


def first_use(thread, case):
    if thread == 0:
        try:
            import torch
        finally:
            torch_imported.set()
    data = case.data.view(Subclass)
    while True:
        got = scatterx.scatter_elements(
            data, case.indices, case.updates, axis=case.axis, reduction=case.reduction
        )
        check(got, case.scattered)
        check(scatterx.gather_elements(data, case.indices, axis=case.axis), case.gathered)
        if torch_imported.wait(0.001):
            break
    tensor_first_use(thread, case)
"""


def test_calls_while_another_thread_imports_torch() -> None:
    """Asked while torch was half imported, ``compiling()`` read ``torch.compiler``,
    which torch binds near the end of its import."""
    first_use_in_threads(_TORCH_COMES_IN + _TENSOR_CALLS)
