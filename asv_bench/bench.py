"""The benchmark harness's command, from a checkout: ``python asv_bench/bench.py --help``.

Python puts this file's folder on ``sys.path``, where the harness, ``scatterx_bench``, is;
``python -m scatterx bench`` runs the same command from a source checkout.
"""

from __future__ import annotations

import sys

from scatterx_bench.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
