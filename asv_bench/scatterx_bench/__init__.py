"""Benchmark harness of scatterx (not public API): ``python -m scatterx bench`` and its cases.

Nothing here is imported by ``import scatterx``. :mod:`.cases` holds the standard cases and
every contestant (the peers in :mod:`.peers`), in both modes (a new array, in place),
shared by the command, the asv suites of ``asv_bench/`` and ``tools/gpu_bench.py``;
:mod:`.libraries` puts the cases on torch tensors and JAX arrays,
with those libraries' own scatters, and :mod:`.library_table` times and prints them
(``--library``); :mod:`.gpu` is ``tools/gpu_bench.py``'s table against torch on CUDA,
judged against the GPU targets; :mod:`.cli` is the command; :mod:`.report` saves a run
(its chart needs matplotlib: ``pip install 'scatterx[bench]'``).
"""

import os

# Every harness times compiled code: in automatic choice (Dask's blocks, gradients, the
# libraries' calls) numba would otherwise leave a call's first runs, warm-ups included,
# to numpy while it compiles in the background. The environment, not
# ``scatterx_numba.set_compile_mode``: worker processes (distributed, asv's) inherit it.
os.environ["SCATTERX_NUMBA_COMPILE"] = "wait"
