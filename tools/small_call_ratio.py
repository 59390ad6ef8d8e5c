"""Front-end cost of the operator text's 3x3 example, as a ratio to a bare put_along_axis.

performance.md's targets: ``scatter_elements`` at most 1.5x of
``out = data.copy(); np.put_along_axis(out, indices, updates, 0)``, and the same call on
torch CPU tensors at most 4 microseconds more than on NumPy arrays (where torch is
installed), measured in one process, interleaved. Run: ``python tools/small_call_ratio.py``.
"""

from __future__ import annotations

import importlib.util
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

import scatterx


def main(number: int = 20000, repeat: int = 9) -> None:
    data = np.zeros((3, 3), dtype=np.float32)
    indices = np.array([[1, 0, 2], [0, 2, 1]])
    updates = np.array([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], dtype=np.float32)

    def bare() -> np.ndarray:
        out = data.copy()
        np.put_along_axis(out, indices, updates, 0)
        return out

    def front_end() -> Any:
        return scatterx.scatter_elements(data, indices, updates, axis=0)

    assert np.array_equal(bare(), front_end())
    print(scatterx.explain(data, indices, updates, axis=0).backend, "runs the call")
    contestants: dict[str, Callable[[], Any]] = {"bare": bare, "numpy": front_end}
    if importlib.util.find_spec("torch") is not None:
        import torch

        tensors = [torch.from_numpy(a.copy()) for a in (data, indices, updates)]
        contestants["torch"] = lambda: scatterx.scatter_elements(*tensors, axis=0)
        assert np.array_equal(contestants["torch"]().numpy(), bare())
        result = bare()
        # The floor of any call that runs NumPy code on tensors: their views, and the result's.
        data_t, indices_t, updates_t = tensors
        contestants["views"] = lambda: (
            (data_t.numpy(), indices_t.numpy(), updates_t.numpy()),
            torch.from_numpy(result),
        )
    rounds = []
    for _ in range(repeat):  # interleaved, so load on the machine hits all alike
        rounds.append({k: timeit.timeit(f, number=number) / number for k, f in contestants.items()})
    ratios = sorted(r["numpy"] / r["bare"] for r in rounds)
    median = sorted(rounds, key=lambda r: r["numpy"] / r["bare"])[repeat // 2]
    low, mid, high = ratios[0], ratios[repeat // 2], ratios[-1]
    print(
        f"put_along_axis {median['bare'] * 1e6:.2f} us, scatter_elements "
        f"{median['numpy'] * 1e6:.2f} us, median ratio {mid:.2f}x (min {low:.2f}x, max "
        f"{high:.2f}x) over {repeat} interleaved rounds (target <= 1.5x)"
    )
    if "torch" in contestants:
        extra = sorted((r["torch"] - r["numpy"]) * 1e6 for r in rounds)
        print(
            f"torch CPU tensors: median {extra[repeat // 2]:+.2f} us over NumPy arrays "
            f"(min {extra[0]:+.2f}, max {extra[-1]:+.2f}; target <= +4 us)"
        )
        views = sorted(r["views"] * 1e6 for r in rounds)[repeat // 2]
        print(f"  of which the views alone (3 Tensor.numpy(), 1 torch.from_numpy): {views:.2f} us")


if __name__ == "__main__":
    main()
