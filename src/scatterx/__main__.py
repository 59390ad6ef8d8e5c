"""``python -m scatterx``: ``backends`` and ``check``.

The benchmark harness is not part of the installed package: it runs from a checkout of the
repository, ``python asv_bench/bench.py --help``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

#: The harness's command, run from a checkout; named here only to say where ``bench`` went.
BENCH_COMMAND = "python asv_bench/bench.py"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m scatterx`` and the ``scatterx`` script."""
    parser = argparse.ArgumentParser(
        prog="python -m scatterx",
        description="ONNX ScatterElements on any array.",
        epilog=f"benchmarks: {BENCH_COMMAND} --help, from a checkout of scatterx's repository",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("backends", help="list the registered backends and what they serve")
    check = commands.add_parser(
        "check",
        help="run the conformance cases on every available backend, through every "
        "installed array library",
    )
    check.add_argument(
        "--backend",
        action="append",
        default=[],
        metavar="NAME",
        help="check only this backend (repeatable); an unavailable one fails",
    )
    check.add_argument(
        "--library",
        action="append",
        default=[],
        metavar="NAME",
        help="run the cases through this array library (repeatable): native (each backend's "
        "own arrays), torch, jax, array_api_strict, or onnx (one-node models in onnx's "
        "ReferenceEvaluator with scatterx.onnx.ops); default: native and every installed "
        "library; a named library that is not installed fails",
    )
    check.add_argument("-v", "--verbose", action="store_true", help="list skipped cases too")
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == ["bench"]:
        parser.error(f"'bench' left the installed scatterx: from a checkout, run {BENCH_COMMAND}")
    args = parser.parse_args(arguments)
    from ._cli import print_backends, run_check

    if args.command == "backends":
        return print_backends()
    return run_check(args.backend, verbose=args.verbose, libraries=args.library)


if __name__ == "__main__":
    sys.exit(main())
