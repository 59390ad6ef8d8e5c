"""The GPU benchmark of tools/gpu_check.sh (``scatterx_bench.gpu``), run here on the CPU.

The table, its ratios and its verdicts are the same code on any backend, so a GPU session's
run of the script is not its first; the cupy strategy column runs on the host emulation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import scatterx._check
from _cupy_emulation import EMULATOR_GROUP, DeviceArray, Emulator, on_device
from scatterx_bench import gpu, peers
from scatterx_bench.base import BenchCase, Unavailable
from scatterx_bench.cases import make_call, make_case


def _cell(reduction: str, ours: float, torch: float | None, det: float | None) -> gpu.Cell:
    return gpu.Cell("c", reduction, ours, "", ("-", None), torch, det, None)


def test_a_cell_misses_what_is_under_its_targets() -> None:
    assert _cell("add", 1.0, 1.0, 2.0).misses() == []
    assert _cell("add", 1.0, 0.99, 2.0).misses() == ["c add: 0.99x torch (target 1.0x)"]
    assert _cell("none", 1.0, 3.0, 1.9).misses() == [
        "c none: 1.90x torch deterministic (target 2.0x)"
    ]
    # max: torch's deterministic mode is its usual kernel, so only the 1x target applies.
    assert _cell("max", 1.0, 1.5, 1.5).misses() == []
    assert _cell("add", 1.0, 1.5, None).misses() == []  # no deterministic mode here
    assert "cannot be judged" in _cell("add", 1.0, None, None).misses()[0]


def test_bandwidth_share_and_its_verdict() -> None:
    row = gpu.Bandwidth(axis=0, nbytes=1 << 30, moved=4 << 30, ours=2.0, floor=1.0, torch=None)
    share = (4 << 30) / 2e-3 / 4.8e12
    assert row.share(4.8) == pytest.approx(share)
    assert share == pytest.approx(0.447, abs=1e-3)
    assert gpu.missed([], [row], 4.0) == []  # 54% of 4 TB/s
    assert gpu.bandwidth_rows([row], 4.0)[1][-1] == "ok"
    assert "axis 0: 45% of the device's bandwidth" in gpu.missed([], [row], 4.8)[0]
    assert gpu.bandwidth_rows([row], 4.8)[1][-1] == "MISS"


def test_the_table_runs_end_to_end_on_a_cpu_backend(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    code = gpu.main(["--backend", "numpy", "--scale", "0.002", "--side", "64", "--repeat", "1"])
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    cells = [line for line in lines if line.startswith("| ") and " ms" not in line]
    assert len(cells) == 12 + 2  # every case x reduction, then both bandwidth rows
    assert code in (0, gpu.MISSED)
    verdict = lines[-1] if code == 0 else next(x for x in lines if x.startswith("targets:"))
    misses = sum(line.count("MISS") for line in cells)
    assert (code == 0) == (verdict == "targets: all met") == (misses == 0)


def test_torch_deterministic_restores_torchs_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    case = make_case("square-random", 0.002)
    seen: list[bool] = []

    def fake(case: BenchCase, reduction: str, mode: str) -> Any:
        return lambda: seen.append(torch.are_deterministic_algorithms_enabled())

    monkeypatch.setattr(peers, "_torch", fake)
    call = make_call(peers.TORCH_DETERMINISTIC, case, "add")
    call()
    assert seen
    assert all(seen)
    assert not torch.are_deterministic_algorithms_enabled()


def test_torch_deterministic_is_unavailable_where_torch_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch = pytest.importorskip("torch")

    def fake(case: BenchCase, reduction: str, mode: str) -> Any:
        def call() -> None:
            msg = "scatter_reduce_cuda does not have a deterministic implementation, but ..."
            raise RuntimeError(msg)

        return call

    monkeypatch.setattr(peers, "_torch", fake)
    with pytest.raises(Unavailable, match="no deterministic mul here: scatter_reduce_cuda"):
        make_call(peers.TORCH_DETERMINISTIC, make_case("1d-histogram", 0.001), "mul")
    assert not torch.are_deterministic_algorithms_enabled()


def test_the_same_as_torch_on_the_cpu() -> None:
    pytest.importorskip("torch")
    case = make_case("embedding-grad", 0.01)
    for reduction in ("none", "add", "max"):
        plain = make_call("torch", case, reduction)().numpy()
        deterministic = make_call(peers.TORCH_DETERMINISTIC, case, reduction)().numpy()
        np.testing.assert_array_equal(plain, deterministic)


@pytest.mark.xdist_group(EMULATOR_GROUP)  # the worker that builds the emulation
def test_cupy_strategies_on_the_emulation(
    on_host: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The strategy column of the table, on the host emulation of the cupy kernels."""
    normalise = scatterx._check.normalise

    def on_the_device(*args: Any) -> Any:  # NumPy's checks, then the arrays moved back
        request = normalise(*args)
        return request._replace(data=on_device(request.data), indices=on_device(request.indices))

    monkeypatch.setattr(scatterx._check, "normalise", on_the_device)
    small = make_case("last-axis-sparse", 0.002).to(on_device)
    chosen, (other, ms) = gpu.cupy_strategies(small, "add")
    assert (chosen, other) == ("columns", "sort")
    assert ms is not None
    assert ms > 0
    assert isinstance(small.data, DeviceArray)
    histogram = make_case("1d-histogram", 0.002).to(on_device)
    assert gpu.cupy_strategies(histogram, "add") == ("sort", ("columns", None))
