"""Benchmark of the cupy backend against torch.scatter_reduce and cupyx on one GPU.

Prints one table of median milliseconds (wall clock, device synchronised, so the backend's
one host sync counts) for the standard cases of performance.md, then the bandwidth of
``none`` on a 1 GiB array as a share of the device's peak. Used by tools/gpu_check.sh.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import cupy
import numpy as np

import scatterx
from scatterx._validate import normalise
from scatterx_cupy._layout import layout
from scatterx_cupy._run import scatter_elements as run_strategy
from scatterx_cupy._run import strategy

PEAK_TBS = float(sys.argv[1]) if len(sys.argv) > 1 else 4.8  # H200 HBM3e
TORCH_REDUCE = {"add": "sum", "max": "amax", "min": "amin", "mul": "prod"}


def _median_ms(run: Callable[[], Any], sync: Callable[[], None], repeat: int) -> float:
    run()
    sync()
    times = []
    for _ in range(repeat):
        sync()
        start = time.perf_counter()
        run()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def _cases(rng: np.random.Generator) -> dict[str, tuple[Any, Any, Any, int]]:
    embedding = np.repeat(rng.integers(0, 30000, (16384, 1)), 256, axis=1)
    shapes = {
        "square-random": ((4096, 4096), rng.integers(0, 4096, (4096, 4096)), 0),
        "1d-histogram": ((65536,), rng.integers(0, 65536, (4194304,)), 0),
        "embedding-grad": ((30000, 256), embedding, 0),
        "last-axis-sparse": ((8192, 1024), rng.integers(0, 1024, (8192, 64)), 1),
    }
    cases = {}
    for name, (shape, indices, axis) in shapes.items():
        data = cupy.asarray(rng.standard_normal(shape, dtype=np.float32))
        updates = cupy.asarray(rng.standard_normal(indices.shape, dtype=np.float32))
        cases[name] = (data, cupy.asarray(indices.astype(np.int64)), updates, axis)
    return cases


def _torch_runner(data: Any, indices: Any, updates: Any, axis: int, reduction: str) -> Any:
    try:
        import torch
    except ImportError:
        return None
    d, i, u = (torch.from_dlpack(a) for a in (data, indices, updates))
    if reduction == "none":
        return lambda: torch.scatter(d, axis, i, u)
    return lambda: torch.scatter_reduce(d, axis, i, u, TORCH_REDUCE[reduction], include_self=True)


def _cupyx_runner(data: Any, indices: Any, updates: Any, axis: int, reduction: str) -> Any:
    import cupyx

    scatter = {"add": cupyx.scatter_add, "max": cupyx.scatter_max, "min": cupyx.scatter_min}
    if reduction not in scatter:
        return None
    grid = list(cupy.indices(indices.shape, dtype=cupy.int64))
    grid[axis] = indices
    flat = cupy.ravel_multi_index(tuple(grid), data.shape).reshape(-1)
    values = updates.reshape(-1)

    def run() -> Any:
        out = data.copy().reshape(-1)
        scatter[reduction](out, flat, values)
        return out

    return run


def _sync() -> None:
    cupy.cuda.get_current_stream().synchronize()
    try:
        import torch

        torch.cuda.synchronize()
    except ImportError:
        pass


def _row(name: str, reduction: str, case: tuple[Any, Any, Any, int]) -> list[str]:
    data, indices, updates, axis = case
    request = normalise(data, indices, updates, axis, reduction)
    lay = layout(request.shape, request.index_shape, request.axis)
    auto = strategy(lay, "float32", reduction)
    repeat = 10
    ours = _median_ms(
        lambda: scatterx.scatter_elements(data, indices, updates, axis=axis, reduction=reduction),
        _sync,
        repeat,
    )
    other = "sort" if auto == "columns" else "columns"
    too_slow = other == "columns" and lay.n_cols < 64 and lay.axis_len > 4096
    alt = None if too_slow else _median_ms(lambda: run_strategy(request, force=other), _sync, 3)
    torch_run = _torch_runner(data, indices, updates, axis, reduction)
    torch_ms = _median_ms(torch_run, _sync, repeat) if torch_run else None
    cupyx_run = _cupyx_runner(data, indices, updates, axis, reduction)
    cupyx_ms = _median_ms(cupyx_run, _sync, repeat) if cupyx_run else None
    ratio = f"{torch_ms / ours:.2f}x" if torch_ms else "-"
    return [
        name,
        reduction,
        f"{ours:.3f} ({auto})",
        f"{alt:.3f} ({other})" if alt is not None else f"- ({other})",
        f"{torch_ms:.3f}" if torch_ms else "-",
        f"{cupyx_ms:.3f}" if cupyx_ms else "-",
        ratio,
    ]


def _bandwidth(rng: np.random.Generator) -> list[list[str]]:
    rows = []
    side = 16384  # float32 16384 x 16384: 1 GiB
    data = cupy.asarray(rng.standard_normal((side, side), dtype=np.float32))
    updates = cupy.asarray(rng.standard_normal((side, side), dtype=np.float32))
    for axis in (0, 1):
        indices = cupy.random.default_rng(1).integers(0, side, (side, side), dtype=cupy.int64)
        moved = 2 * data.nbytes + indices.nbytes + updates.nbytes  # read data, write out
        ours = _median_ms(
            lambda a=axis, i=indices: scatterx.scatter_elements(data, i, updates, axis=a),
            _sync,
            3,
        )
        floor = _median_ms(lambda i=indices: (data.copy(), i.copy(), updates.copy()), _sync, 3)
        torch_run = _torch_runner(data, indices, updates, axis, "none")
        torch_ms = _median_ms(torch_run, _sync, 3) if torch_run else None
        tbs = moved / ours / 1e9
        rows.append(
            [
                f"none 1 GiB f32 axis={axis}",
                f"{ours:.2f} ms",
                f"{tbs:.2f} TB/s = {100 * tbs / PEAK_TBS:.0f}% of {PEAK_TBS} TB/s",
                f"copy of the same bytes {floor:.2f} ms",
                f"torch.scatter {torch_ms:.2f} ms" if torch_ms else "torch -",
            ]
        )
        del indices
    return rows


def _print(rows: list[list[str]]) -> None:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    for row in rows:
        print("| " + " | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) + " |")


def main() -> None:
    """Run the benchmark on the current device and print the tables."""
    device = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    print(f"device: {device['name'].decode()}, cupy {cupy.__version__}")
    rng = np.random.default_rng(0)
    header = [
        "case",
        "red",
        "cupy ms (auto)",
        "cupy ms (other)",
        "torch ms",
        "cupyx ms",
        "torch/cupy",
    ]
    rows = [header]
    for name, case in _cases(rng).items():
        for reduction in ("none", "add", "max"):
            rows.append(_row(name, reduction, case))
    _print(rows)
    print()
    _print(_bandwidth(rng))


if __name__ == "__main__":
    main()
