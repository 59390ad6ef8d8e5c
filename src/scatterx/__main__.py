"""``python -m scatterx``: backends, check, bench."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m scatterx`` and the ``scatterx`` script."""
    parser = argparse.ArgumentParser(
        prog="python -m scatterx", description="ONNX ScatterElements on any array."
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
        "own arrays), torch, jax or array_api_strict; default: native and every installed "
        "library; a named library that is not installed fails",
    )
    check.add_argument("-v", "--verbose", action="store_true", help="list skipped cases too")
    commands.add_parser(
        "bench", help="time backends and peers side by side (see bench -h)", add_help=False
    )
    args, rest = parser.parse_known_args(argv)
    if args.command == "bench":
        from ._bench.cli import main as bench_main

        return int(bench_main(list(rest)))
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    from ._cli import print_backends, run_check

    if args.command == "backends":
        return print_backends()
    return run_check(args.backend, verbose=args.verbose, libraries=args.library)


if __name__ == "__main__":
    sys.exit(main())
