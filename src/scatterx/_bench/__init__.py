"""Benchmark harness of scatterx (not public API): ``python -m scatterx bench`` and its cases.

Nothing here is imported by ``import scatterx``. :mod:`.cases` holds the standard cases and
every contestant, shared by the command, the asv suites of ``asv_bench/`` and
``tools/gpu_bench.py``; :mod:`.libraries` puts the cases on torch tensors and JAX arrays,
with those libraries' own scatters, and :mod:`.library_table` times and prints them
(``--library``); :mod:`.cli` is the command; :mod:`.report` saves a run (its chart needs
matplotlib: ``pip install 'scatterx[bench]'``).
"""
