"""The benchmark harness's command, from a checkout: ``python asv_bench/bench.py --help``.

Python puts this file's folder on ``sys.path``, where the harness, ``scatterx_bench``, is, so
it runs from a fresh clone with scatterx installed and nothing more. The installed scatterx
knows nothing of the harness: ``python -m scatterx bench`` is gone, in favour of this file.
"""

from __future__ import annotations

import sys

from scatterx_bench.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
