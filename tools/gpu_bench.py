"""Benchmark of the cupy backend against torch on one GPU, judged against the GPU targets.

Prints one table of the standard cases (the backend, another of its strategies, torch,
torch's deterministic mode, cupyx; the ratios and each cell's verdict), then the bandwidth
of ``none`` on 1 GiB, then the targets missed; exits 0 when all hold, 3 when one does not.
The code is ``scatterx._bench.gpu`` (its docstring says what is timed and how).
Usage: ``python tools/gpu_bench.py [--peak TB/s] [--backend NAME] [--scale S] [--side N]``;
tools/gpu_check.sh runs it.
"""

from __future__ import annotations

import sys

from scatterx._bench.gpu import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
