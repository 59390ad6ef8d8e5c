"""Front-end cost of the operator text's 3x3 example, as a ratio to a bare put_along_axis.

performance.md's target: ``scatter_elements`` at most 1.5x of
``out = data.copy(); np.put_along_axis(out, indices, updates, 0)``, measured in one process.
Run: ``python tools/small_call_ratio.py``.
"""

from __future__ import annotations

import timeit

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

    def front_end() -> np.ndarray:
        return scatterx.scatter_elements(data, indices, updates, axis=0)  # type: ignore[no-any-return]

    assert np.array_equal(bare(), front_end())
    print(scatterx.explain(data, indices, updates, axis=0).backend, "runs the call")
    rounds = []
    for _ in range(repeat):  # interleaved, so load on the machine hits both alike
        t_bare = timeit.timeit(bare, number=number) / number
        t_front = timeit.timeit(front_end, number=number) / number
        rounds.append((t_front / t_bare, t_bare, t_front))
    ratio, t_bare, t_front = sorted(rounds)[len(rounds) // 2]
    print(
        f"put_along_axis {t_bare * 1e6:.2f} us, scatter_elements {t_front * 1e6:.2f} us, "
        f"median ratio {ratio:.2f}x over {repeat} interleaved rounds (target <= 1.5x)"
    )


if __name__ == "__main__":
    main()
