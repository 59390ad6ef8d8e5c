"""``python -m scatterx``: backends, check, and bench, which runs a checkout's harness."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

#: The benchmark harness is not installed: it lives in a source checkout, in this folder.
HARNESS_FOLDER = "asv_bench"
HOW_TO_BENCH = (
    "the benchmark harness is not part of the installed scatterx: it lives in a checkout "
    f"of its repository, in {HARNESS_FOLDER}/scatterx_bench. From the checkout, with scatterx "
    f"installed: python {HARNESS_FOLDER}/bench.py --help"
)


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
        "own arrays), torch, jax, array_api_strict, or onnx (one-node models in onnx's "
        "ReferenceEvaluator with scatterx.onnx.ops); default: native and every installed "
        "library; a named library that is not installed fails",
    )
    check.add_argument("-v", "--verbose", action="store_true", help="list skipped cases too")
    commands.add_parser(
        "bench",
        help="time backends and peers side by side, with the harness of a source checkout "
        f"(python {HARNESS_FOLDER}/bench.py; see bench -h)",
        add_help=False,
    )
    args, rest = parser.parse_known_args(argv)
    if args.command == "bench":
        return bench(list(rest))
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    from ._cli import print_backends, run_check

    if args.command == "backends":
        return print_backends()
    return run_check(args.backend, verbose=args.verbose, libraries=args.library)


def find_harness() -> Path | None:
    """The ``asv_bench`` folder holding ``scatterx_bench``: beside the source this package was
    imported from (an editable install), else in the current directory; None without one."""
    source_checkout = Path(__file__).resolve().parents[2]
    for root in (source_checkout, Path.cwd()):
        folder = root / HARNESS_FOLDER
        if (folder / "scatterx_bench" / "cli.py").is_file():
            return folder
    return None


def bench(argv: list[str]) -> int:
    """``python -m scatterx bench ARGS``: ``python asv_bench/bench.py ARGS`` of a checkout, or
    what to run where the harness is not found (exit status 2)."""
    folder = find_harness()
    if folder is None:
        print(f"python -m scatterx bench: {HOW_TO_BENCH}", file=sys.stderr)
        return 2
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    cli = importlib.import_module("scatterx_bench.cli")
    return int(cli.main(argv, prog="python -m scatterx bench"))


if __name__ == "__main__":
    sys.exit(main())
