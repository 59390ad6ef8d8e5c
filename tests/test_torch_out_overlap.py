"""A tensor ``out`` whose elements may share memory, eagerly and under ``torch.compile``.

Contract section 7 (issue 42 item 2): ``out`` is taken only where its strides prove it
free of self-overlap (``scatterx._check.out.refuse_self_overlap``); a stride of 0 or an
``as_strided`` view whose elements meet, or cannot be shown apart, raises that rule's
ValueError before anything is written. Compiled, torch raised its own errors instead
(``BackendCompilerFailed`` from AOTAutograd for a stride of 0) or ran the call; now
dynamo's fake run of the ``*_out`` operator raises the rule's ValueError, which torch
reports as a ``TorchRuntimeError`` with the same words (the ValueError in its chain).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import scatterx

torch = pytest.importorskip("torch")

#: Layouts of a (4, 3) ``out`` that the rule refuses, with their strides.
OVERLAPPING: dict[str, Callable[[], Any]] = {
    "expand": lambda: torch.zeros(3).expand(4, 3),
    "as_strided, elements meet": lambda: torch.as_strided(torch.zeros(16), (4, 3), (1, 1)),
    "as_strided, not shown apart": lambda: torch.as_strided(torch.zeros(16), (4, 3), (3, 2)),
}
#: Layouts of a (4, 3) ``out`` that the rule takes: not contiguous, free of self-overlap.
FREE: dict[str, Callable[[], Any]] = {
    "transposed": lambda: torch.zeros(3, 4).T,
    "sliced": lambda: torch.zeros(8, 6)[::2, 1:4],
    "reversed": lambda: torch.zeros(4, 3).flip(0),
}
WORDS = "out has elements that share memory"
BACKENDS = ["eager", "aot_eager", "inductor"]


def _arrays() -> tuple[Any, Any, Any]:
    data = torch.arange(12.0).reshape(4, 3)
    indices = torch.tensor([[3, 0, 1], [2, 2, 0], [1, 3, 3], [0, 1, 2]])
    return data, indices, torch.full((4, 3), 0.5)


def _scatter(data: Any, indices: Any, updates: Any, out: Any) -> Any:
    return scatterx.scatter_elements(data, indices, updates, reduction="add", out=out)


def _gather(data: Any, indices: Any, updates: Any, out: Any) -> Any:
    return scatterx.gather_elements(data, indices, out=out)


def _in_place(data: Any, indices: Any, updates: Any, out: Any) -> Any:
    """``out`` is ``data``: its own values are the data."""
    return scatterx.scatter_elements(out, indices, updates, reduction="add", out=out)


def _scatter_out_op(data: Any, indices: Any, updates: Any, out: Any) -> Any:
    torch.ops.scatterx.scatter_elements_out(data, indices, updates, 0, "add", None, out)
    return out


def _gather_out_op(data: Any, indices: Any, updates: Any, out: Any) -> Any:
    torch.ops.scatterx.gather_elements_out(data, indices, 0, None, out)
    return out


CALLS: dict[str, Callable[..., Any]] = {
    "scatter": _scatter,
    "gather": _gather,
    "scatter in place": _in_place,
    "scatter_elements_out": _scatter_out_op,
    "gather_elements_out": _gather_out_op,
}


def _eager_error(call: Callable[..., Any], layout: Callable[[], Any]) -> str:
    """The eager call's ValueError; ``out`` left as it was."""
    out = layout()
    before = out.clone()
    with pytest.raises(ValueError, match=WORDS) as caught:
        call(*_arrays(), out)
    assert torch.equal(out, before)
    return str(caught.value)


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    while error is not None:
        yield error
        error = error.__cause__ or error.__context__


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("layout", list(OVERLAPPING))
def test_an_overlapping_out_is_refused_eagerly(layout: str, call: str) -> None:
    message = _eager_error(CALLS[call], OVERLAPPING[layout])
    strides = re.escape(str(OVERLAPPING[layout]().stride()))
    assert re.search(rf"^{WORDS} \(shape \(4, 3\), strides {strides}:", message)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("layout", list(OVERLAPPING))
def test_an_overlapping_out_is_refused_compiled(layout: str, call: str, backend: str) -> None:
    """The eager call's ValueError, word for word, where torch.compile traces the call."""
    message = _eager_error(CALLS[call], OVERLAPPING[layout])
    torch._dynamo.reset()
    compiled = torch.compile(CALLS[call], backend=backend)
    out = OVERLAPPING[layout]()
    before = out.clone()
    with pytest.raises((ValueError, RuntimeError)) as caught:
        compiled(*_arrays(), out)
    assert message in str(caught.value)
    assert any(type(e) is ValueError and str(e) == message for e in _chain(caught.value))
    assert torch.equal(out, before)


@pytest.mark.parametrize("call", ["scatter", "gather", "scatter_elements_out"])
def test_an_overlapping_out_is_refused_with_dynamic_shapes(call: str) -> None:
    torch._dynamo.reset()
    compiled = torch.compile(CALLS[call], backend="eager", fullgraph=True, dynamic=True)
    with pytest.raises((ValueError, RuntimeError)) as caught:
        compiled(*_arrays(), OVERLAPPING["as_strided, elements meet"]())
    assert any(type(e) is ValueError and WORDS in str(e) for e in _chain(caught.value))


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("layout", list(FREE))
def test_an_out_free_of_overlap_is_written_compiled_as_eagerly(
    layout: str, call: str, dynamic: bool
) -> None:
    expected = CALLS[call](*_arrays(), FREE[layout]())
    torch._dynamo.reset()
    compiled = torch.compile(CALLS[call], backend="eager", fullgraph=True, dynamic=dynamic)
    out = FREE[layout]()
    assert compiled(*_arrays(), out) is out
    assert torch.equal(out, expected)
