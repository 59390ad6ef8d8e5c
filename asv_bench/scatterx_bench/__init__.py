"""Benchmark harness of scatterx, beside its asv suites (not installed, not public API).

Run from a checkout: ``python asv_bench/bench.py --help`` (nothing installed imports it).
:mod:`.cases` holds the standard cases and every contestant (the peers in
:mod:`.peers`, what they are built from in :mod:`.base`, the ScatterND and GatherND cases
in :mod:`.nd`), in both modes (a new array, in place), shared by the command, the asv
suites of ``asv_bench/benchmarks`` and ``tools/gpu_bench.py``; :mod:`.nd_bench` is the
``--nd`` table; :mod:`.libraries` puts the cases on torch tensors and JAX arrays,
with those libraries' own scatters, and :mod:`.library_table` times and prints them
(``--library``); :mod:`.dask_arrays` and :mod:`.dask_bench` do so for Dask arrays;
:mod:`.gpu` is ``tools/gpu_bench.py``'s table against torch on CUDA, judged against the GPU
targets; :mod:`.cli` is the command; :mod:`.report` saves a run (its chart needs matplotlib:
``pip install 'scatterx[bench]'``). Importing any of it changes nothing in the process: the
entry points ask for numba's compiled code themselves (:func:`.base.wait_for_numba`).
"""
