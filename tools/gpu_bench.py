"""Benchmark of the cupy backend against torch.scatter_reduce and cupyx on one GPU.

Prints one table of median milliseconds (wall clock, device synchronised, so the backend's
one host sync counts) for the standard cases of performance.md, then the bandwidth of
``none`` on a 1 GiB array as a share of the device's peak. Used by tools/gpu_check.sh.
Usage: ``python tools/gpu_bench.py [peak TB/s]``. The cases and the contestants are those
of every benchmark harness (``scatterx._bench.cases``), moved to the device.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from scatterx._bench.cases import (
    CASE_NAMES,
    FLOOR,
    BenchCase,
    Unavailable,
    make_call,
    make_case,
    median_ms,
    synchronised,
)

PEAK_TBS = 4.8  # H200 HBM3e, the device of this project's GPU checks
REDUCTIONS = ("none", "add", "max")
REPEAT = 10


def standard_cases(move: Callable[[Any], Any]) -> dict[str, BenchCase]:
    """The standard cases at full size, their arrays passed through ``move``."""
    return {name: make_case(name).to(move) for name in CASE_NAMES}


def _ms(contestant: str, case: BenchCase, reduction: str, repeat: int) -> float | None:
    try:
        return median_ms(make_call(contestant, case, reduction), repeat)
    except Unavailable:
        return None


def _other_strategy_ms(case: BenchCase, reduction: str) -> tuple[str, str, float | None]:
    """The strategy the cupy backend chooses, the other one, and the latter's time."""
    from scatterx._validate import normalise
    from scatterx_cupy._layout import layout
    from scatterx_cupy._run import scatter_elements as run_strategy
    from scatterx_cupy._run import strategy

    request = normalise(*case.arrays, case.axis, reduction)
    lay = layout(request.shape, request.index_shape, request.axis)
    auto = strategy(lay, "float32", reduction)
    other = "sort" if auto == "columns" else "columns"
    if other == "columns" and lay.n_cols < 64 and lay.axis_len > 4096:
        return auto, other, None  # few, long columns: one thread walks each, too slow to time
    forced = synchronised(lambda: run_strategy(request, force=other), case.data)
    return auto, other, median_ms(forced, 3)


def _cell(ms: float | None, note: str = "") -> str:
    text = "-" if ms is None else f"{ms:.3f}"
    return f"{text} ({note})" if note else text


def _row(case: BenchCase, reduction: str) -> list[str]:
    ours = median_ms(make_call("cupy", case, reduction), REPEAT)
    auto, other, alt = _other_strategy_ms(case, reduction)
    torch_ms = _ms("torch", case, reduction, REPEAT)
    return [
        case.name,
        reduction,
        _cell(ours, auto),
        _cell(alt, other),
        _cell(torch_ms),
        _cell(_ms("cupyx", case, reduction, REPEAT)),
        "-" if torch_ms is None else f"{torch_ms / ours:.2f}x",
    ]


def _bandwidth_case(axis: int) -> BenchCase:
    """``none`` on float32 16384 x 16384 (1 GiB), made on the device: not a standard case."""
    import cupy

    side = 16384
    rng = cupy.random.default_rng(axis)
    data = rng.random((side, side), dtype=cupy.float32)
    updates = rng.random((side, side), dtype=cupy.float32)
    indices = rng.integers(0, side, (side, side), dtype=cupy.int64)
    return BenchCase(f"none-1gib-axis{axis}", data, indices, updates, axis)


def _bandwidth_row(case: BenchCase, peak_tbs: float) -> list[str]:
    # data read and the result written, indices and updates read
    moved = 2 * case.data.nbytes + case.indices.nbytes + case.updates.nbytes
    ours = median_ms(make_call("cupy", case, "none"), 3)
    floor = median_ms(make_call(FLOOR, case, "none"), 3)
    torch_ms = _ms("torch", case, "none", 3)
    tbs = moved / ours / 1e9
    return [
        f"none 1 GiB f32 axis={case.axis}",
        f"{ours:.2f} ms",
        f"{tbs:.2f} TB/s = {100 * tbs / peak_tbs:.0f}% of {peak_tbs} TB/s",
        f"copy of the same bytes {floor:.2f} ms",
        f"torch.scatter {torch_ms:.2f} ms" if torch_ms is not None else "torch -",
    ]


def _print(rows: list[list[str]]) -> None:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    for row in rows:
        print("| " + " | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) + " |")


def main(argv: list[str]) -> None:
    """Run the benchmark on the current device and print the tables."""
    import cupy

    peak_tbs = float(argv[0]) if argv else PEAK_TBS
    device = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    print(f"device: {device['name'].decode()}, cupy {cupy.__version__}")
    header = ["case", "red", "cupy ms (auto)", "cupy ms (other)", "torch ms", "cupyx ms"]
    rows = [[*header, "torch/cupy"]]
    for case in standard_cases(cupy.asarray).values():
        rows += [_row(case, reduction) for reduction in REDUCTIONS]
    _print(rows)
    print()
    _print([_bandwidth_row(_bandwidth_case(axis), peak_tbs) for axis in (0, 1)])


if __name__ == "__main__":
    main(sys.argv[1:])
