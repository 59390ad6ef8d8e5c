"""Benchmark harness of scatterx (not public API): ``python -m scatterx bench`` and its cases.

Nothing here is imported by ``import scatterx``. :mod:`.cases` holds the standard cases and
every contestant, shared by the command, the asv suites of ``asv_bench/`` and
``tools/gpu_bench.py``; :mod:`.cli` is the command; :mod:`.report` saves a run (its chart
needs matplotlib: ``pip install 'scatterx[bench]'``).
"""
