"""``python asv_bench/bench.py --grad``: the training table runs and says what it measured."""

from __future__ import annotations

import pytest

from scatterx_bench.cli import main
from scatterx_bench.grad_bench import FORWARDS, compiled_forward, grad_cases, steps

pytest.importorskip("torch")


def test_grad_table_prints_every_phase_of_both_cases(capsys: pytest.CaptureFixture[str]) -> None:
    # aot_eager: the compiled step traced and compiled by AOTAutograd, without inductor's
    # code generation (minutes on a small machine); the bench's default is inductor.
    assert main(["--grad", "--size", "0.002", "--repeat", "1", "--grad-compiler", "aot_eager"]) == 0
    out = capsys.readouterr().out
    for case in ("embedding-grad", "message-passing"):
        for phase in ("step", "forward", "backward", "compiled"):
            assert any(line.split()[:2] == [case, phase] for line in out.splitlines())
    assert "torch.scatter_reduce" in out or "scatter_reduce(include_self=True)" in out


@pytest.mark.parametrize("contestant", ["scatterx", "torch"])
def test_each_contestant_sums_the_messages_and_records_the_call(contestant: str) -> None:
    import torch

    case = grad_cases(0.002)[1]
    calls = steps(case, contestant)
    out = calls["forward"]()
    assert out.requires_grad
    calls["step"]()  # runs the backward and clears the leaves' gradients
    expected = torch.from_numpy(case.data) * 0
    expected.index_add_(0, torch.from_numpy(case.indices[:, 0]), torch.from_numpy(case.updates))
    torch.testing.assert_close(out.detach() - torch.from_numpy(case.data), expected)


@pytest.mark.parametrize("contestant", ["scatterx", "torch"])
def test_the_compiled_forward_gives_the_eager_bits_and_gradients(contestant: str) -> None:
    import torch

    case = grad_cases(0.002)[1]
    results = []
    for forward in (FORWARDS[contestant], compiled_forward(contestant, "aot_eager")):
        data = torch.from_numpy(case.data.copy()).requires_grad_()
        updates = torch.from_numpy(case.updates.copy()).requires_grad_()
        out = forward(data, torch.from_numpy(case.indices), updates, case.axis)
        out.backward(torch.ones_like(out))
        results.append((out.detach(), data.grad, updates.grad))
    for a, b in zip(*results, strict=True):
        assert torch.equal(a, b)
