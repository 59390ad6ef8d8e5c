"""Benchmark of the cupy backend against torch on one GPU, judged against the GPU targets.

Prints one table of the standard cases (the backend, another of its strategies, torch,
torch's deterministic mode, cupyx; the ratios and each cell's verdict), then the bandwidth
of ``none`` on 1 GiB, then the targets missed; exits 0 when all hold, 3 when one does not.
The code is ``asv_bench/scatterx_bench/gpu.py`` (its docstring says what is timed and how).
Usage: ``python tools/gpu_bench.py [--peak TB/s] [--backend NAME] [--scale S] [--side N]``;
tools/gpu_check.sh runs it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

#: The checkout's benchmark harness, ``scatterx_bench``, is in this folder.
HARNESS_ROOT = Path(__file__).resolve().parents[1] / "asv_bench"


def main(argv: list[str]) -> int:
    """Run the harness's GPU table (``scatterx_bench.gpu``) on ``argv``, timing compiled code
    (``scatterx_bench.base.wait_for_numba``)."""
    sys.path.insert(0, str(HARNESS_ROOT))
    importlib.import_module("scatterx_bench.base").wait_for_numba()
    gpu = importlib.import_module("scatterx_bench.gpu")
    return int(gpu.main(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
