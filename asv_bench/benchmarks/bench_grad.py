"""A training step on torch CPU tensors: scatter add forward + backward, scatterx against
torch.scatter_reduce with torch's autograd (``python asv_bench/bench.py --grad``)."""

from __future__ import annotations

from typing import Any

from scatterx_bench.base import require
from scatterx_bench.cases import SIZES
from scatterx_bench.grad_bench import CONTESTANTS, grad_cases, steps

CASES = ["embedding-grad", "message-passing"]


class GradStep:
    """Forward + backward, and the forward alone, of each contestant."""

    params = (list(CONTESTANTS), CASES, list(SIZES))
    param_names = ("contestant", "case", "size")
    timeout = 300

    def setup(self, contestant: str, case: str, size: str) -> None:
        require("torch")
        (found,) = [c for c in grad_cases(SIZES[size]) if c.name == case]
        self.calls = steps(found, contestant)

    def time_step(self, *params: str) -> Any:
        return self.calls["step"]()

    def time_forward(self, *params: str) -> Any:
        return self.calls["forward"]()
