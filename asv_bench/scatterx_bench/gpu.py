"""The GPU benchmark of ``tools/gpu_check.sh``: the cupy backend against torch, with targets.

One table of the standard cases (performance.md) under none, add and max: the median
milliseconds (wall clock, the device synchronised, so that the backend's host sync counts)
of the backend, of another of its strategies, of ``torch.scatter``/``scatter_reduce``
(atomics on CUDA), of torch under ``torch.use_deterministic_algorithms(True)`` and of
cupyx; then each cell's ratios and its verdict against performance.md's GPU targets: at
least :data:`TARGET_VS_TORCH` torch, and :data:`TARGET_VS_DETERMINISTIC` torch's
deterministic mode where that is an implementation of its own
(:data:`DETERMINISTIC_REDUCTIONS`). Then ``none`` on a 1 GiB float32 array, along each
axis, as a share of the device's peak bandwidth (target :data:`TARGET_BANDWIDTH`).
:func:`main` prints it all and returns 0 when every target holds, :data:`MISSED` when
some does not (the table says which).

Any backend on any device runs the same table (``--backend numba --scale 0.01`` on a CPU,
as the test suite does), so the script that a GPU session runs has run here first.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .base import FLOOR, BenchCase, Unavailable, synchronised
from .cases import CASE_NAMES, make_call, make_case, median_ms
from .peers import TORCH_DETERMINISTIC

TARGET_VS_TORCH = 1.0
TARGET_VS_DETERMINISTIC = 2.0
TARGET_BANDWIDTH = 0.5
#: H200 HBM3e, TB/s: the device of this project's GPU checks.
PEAK_TBS = 4.8
REDUCTIONS = ("none", "add", "max")
REPEAT = 10
#: The side of the square float32 array of the bandwidth rows: 16384**2 * 4 bytes = 1 GiB.
SIDE = 16384
#: Where torch's deterministic mode is an implementation of its own on CUDA, so that the
#: 2x target applies: ``scatter`` with a tensor ``src`` and ``scatter_reduce`` with sum
#: (torch.use_deterministic_algorithms's docstring). Its max and min atomics are already
#: order-free: the mode runs the same kernel, and 1x torch is their target; prod raises.
DETERMINISTIC_REDUCTIONS = frozenset({"none", "add"})
#: What :func:`main` returns when the table ran but a target was missed.
MISSED = 3

Timing = tuple[str, float | None]  # (what was timed, its median ms or None: not measured)
#: ``(case, reduction) -> (strategy chosen, (another strategy, its ms))``, for the table.
Strategies = Callable[[BenchCase, str], tuple[str, Timing]]


@dataclass(frozen=True)
class Cell:
    """One case and reduction: the backend's time and each peer's (None: cannot run)."""

    case: str
    reduction: str
    ours: float
    strategy: str
    other: Timing
    torch: float | None
    deterministic: float | None
    cupyx: float | None

    def ratio(self, peer_ms: float | None) -> float | None:
        """How many times faster than the peer the backend is (above 1: faster)."""
        return None if peer_ms is None else peer_ms / self.ours

    def misses(self) -> list[str]:
        """The targets this cell misses, each said in a line; torch not measured is one."""
        name = f"{self.case} {self.reduction}"
        vs_torch, vs_det = self.ratio(self.torch), self.ratio(self.deterministic)
        if self.reduction not in DETERMINISTIC_REDUCTIONS:
            vs_det = None
        if vs_torch is None:
            return [f"{name}: torch was not measured, so the target cannot be judged"]
        found = []
        if vs_torch < TARGET_VS_TORCH:
            found.append(f"{name}: {vs_torch:.2f}x torch (target {TARGET_VS_TORCH}x)")
        if vs_det is not None and vs_det < TARGET_VS_DETERMINISTIC:
            found.append(
                f"{name}: {vs_det:.2f}x torch deterministic (target {TARGET_VS_DETERMINISTIC}x)"
            )
        return found


@dataclass(frozen=True)
class Bandwidth:
    """``none`` on one large array: the backend, the copy floor and torch, in ms."""

    axis: int
    nbytes: int
    moved: int
    ours: float
    floor: float
    torch: float | None

    def share(self, peak_tbs: float) -> float:
        """The backend's bytes moved per second as a share of the device's peak."""
        return self.moved / (self.ours * 1e-3) / (peak_tbs * 1e12)


def _ms(contestant: str, case: BenchCase, reduction: str, repeat: int) -> float | None:
    try:
        return median_ms(make_call(contestant, case, reduction), repeat)
    except Unavailable:
        return None


def measure(
    case: BenchCase,
    reduction: str,
    backend: str = "cupy",
    repeat: int = REPEAT,
    strategies: Strategies | None = None,
) -> Cell:
    """Time ``case`` under ``reduction`` on ``backend`` and on each peer, where it is."""
    ours = median_ms(make_call(backend, case, reduction), repeat)
    chosen, other = strategies(case, reduction) if strategies else ("", ("-", None))
    return Cell(
        case.name,
        reduction,
        ours,
        chosen,
        other,
        _ms("torch", case, reduction, repeat),
        _ms(TORCH_DETERMINISTIC, case, reduction, repeat),
        _ms("cupyx", case, reduction, repeat),
    )


def bandwidth_case(axis: int, xp: Any, side: int = SIDE) -> BenchCase:
    """``none`` on a float32 ``side x side`` array (1 GiB by default), made by ``xp``
    (numpy, or cupy: on the device, with no host copy): not a standard case."""
    rng = xp.random.default_rng(axis)
    data = rng.random((side, side), dtype=xp.float32)
    updates = rng.random((side, side), dtype=xp.float32)
    indices = rng.integers(0, side, (side, side), dtype=xp.int64)
    return BenchCase(f"none-{data.nbytes >> 20}mib-axis{axis}", data, indices, updates, axis)


def measure_bandwidth(case: BenchCase, backend: str = "cupy", repeat: int = 3) -> Bandwidth:
    """``none`` on ``case``: data read and the result written, indices and updates read."""
    data = case.data
    moved = 2 * data.nbytes + case.indices.nbytes + case.updates.nbytes
    ours = median_ms(make_call(backend, case, "none"), repeat)
    floor = median_ms(make_call(FLOOR, case, "none"), repeat)
    torch_ms = _ms("torch", case, "none", repeat)
    return Bandwidth(case.axis, data.nbytes, moved, ours, floor, torch_ms)


def _ms_text(ms: float | None, note: str = "") -> str:
    text = "-" if ms is None else f"{ms:.3f}"
    return f"{text} ({note})" if note else text


def _ratio_text(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def cell_rows(cells: list[Cell], backend: str) -> list[list[str]]:
    """The table of :func:`measure`'s cells, its header first."""
    header = [
        "case",
        "red",
        f"{backend} ms (strategy)",
        "other strategy ms",
        "torch ms",
        "torch det. ms",
        "cupyx ms",
        "vs torch",
        "vs det.",
        "targets",
    ]
    rows = [header]
    for cell in cells:
        other_name, other_ms = cell.other
        rows.append(
            [
                cell.case,
                cell.reduction,
                _ms_text(cell.ours, cell.strategy),
                _ms_text(other_ms, other_name) if other_name != "-" else "-",
                _ms_text(cell.torch),
                _ms_text(cell.deterministic),
                _ms_text(cell.cupyx),
                _ratio_text(cell.ratio(cell.torch)),
                _ratio_text(cell.ratio(cell.deterministic)),
                "MISS" if cell.misses() else "ok",
            ]
        )
    return rows


def bandwidth_rows(rows: list[Bandwidth], peak_tbs: float) -> list[list[str]]:
    """The bandwidth table, its header first."""
    table = [["none", "ms", "bandwidth", "copy floor ms", "torch.scatter ms", "target"]]
    for row in rows:
        share = row.share(peak_tbs)
        table.append(
            [
                f"{row.nbytes >> 20} MiB float32, axis {row.axis}",
                f"{row.ours:.2f}",
                f"{row.moved / row.ours / 1e9:.2f} TB/s = {100 * share:.0f}% of {peak_tbs} TB/s",
                f"{row.floor:.2f}",
                _ms_text(row.torch),
                "ok" if share >= TARGET_BANDWIDTH else "MISS",
            ]
        )
    return table


def missed(cells: list[Cell], rows: list[Bandwidth], peak_tbs: float) -> list[str]:
    """Every target missed, a line each: empty when all hold."""
    found = [line for cell in cells for line in cell.misses()]
    for row in rows:
        share = row.share(peak_tbs)
        if share < TARGET_BANDWIDTH:
            found.append(
                f"none on {row.nbytes >> 20} MiB, axis {row.axis}: {100 * share:.0f}% of the "
                f"device's bandwidth (target {100 * TARGET_BANDWIDTH:.0f}%)"
            )
    return found


def format_table(rows: list[list[str]]) -> str:
    """``rows`` as a Markdown table, its first row the header."""
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    lines = [
        "| " + " | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def cupy_strategies(case: BenchCase, reduction: str) -> tuple[str, Timing]:
    """The strategy the cupy backend chooses, and another one timed: the default one when a
    fast path is chosen, else ``sort`` for ``columns`` and ``columns`` for the rest."""
    from scatterx._check import normalise
    from scatterx_cupy._layout import layout
    from scatterx_cupy._run import scatter_elements as run_strategy
    from scatterx_cupy._run import strategy

    request = normalise(*case.arrays, case.axis, reduction)
    lay = layout(request.shape, request.index_shape, request.axis)
    size = request.data.size
    chosen = strategy(lay, request.dtype_key, reduction, size)
    default = strategy(lay, request.dtype_key, reduction, size, fast=False)
    other = default if default != chosen else ("sort" if chosen == "columns" else "columns")
    if other == "columns" and lay.n_cols < 64 and lay.axis_len > 4096:
        return chosen, (other, None)  # few, long columns: one thread walks each, too slow
    forced = synchronised(lambda: run_strategy(request, force=other), case.data)
    return chosen, (other, median_ms(forced, 3))


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tools/gpu_bench.py", description=__doc__)
    parser.add_argument("--backend", default="cupy", help="the scatterx backend timed")
    parser.add_argument("--peak", type=float, default=PEAK_TBS, help="device peak, TB/s")
    parser.add_argument("--scale", type=float, default=1.0, help="scale of the cases")
    parser.add_argument("--side", type=int, default=SIDE, help="side of the bandwidth array")
    parser.add_argument("--repeat", type=int, default=REPEAT, help="timed calls per cell")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    """Time the table, print it and the targets missed; 0 when none is, else MISSED."""
    import numpy as np

    args = _arguments(argv)
    on_gpu = args.backend == "cupy"
    if on_gpu:
        import cupy

        xp: Any = cupy
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        print(f"device: {props['name'].decode()}, cupy {cupy.__version__}")
    else:
        xp = np
    strategies = cupy_strategies if on_gpu else None
    cells = []
    for name in CASE_NAMES:
        case = make_case(name, args.scale).to(xp.asarray)
        cells += [measure(case, r, args.backend, args.repeat, strategies) for r in REDUCTIONS]
    rows = [measure_bandwidth(bandwidth_case(axis, xp, args.side), args.backend) for axis in (0, 1)]
    print(format_table(cell_rows(cells, args.backend)))
    print()
    print(format_table(bandwidth_rows(rows, args.peak)))
    lines = missed(cells, rows, args.peak)
    print()
    if not lines:
        print("targets: all met")
        return 0
    print(f"targets: {len(lines)} missed")
    for line in lines:
        print(f"  - {line}")
    return MISSED
