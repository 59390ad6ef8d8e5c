"""The options of ``python asv_bench/bench.py``: its argument parser, apart from the runs
(:mod:`.cli`) that read them."""

from __future__ import annotations

import argparse

from .base import BENCH_EXTRA, MODES, NUMBA_COMPILE_MODES
from .cases import ALL_CASE_NAMES, CPU_PEERS, ROW_KINDS
from .dask_scaling import CHUNK_SIZE, ScalingConfig
from .libraries import LIBRARIES
from .nd import ND_CASE_NAMES
from .peers import ONNXRUNTIME_ONE_THREAD
from .timing import CALLS, ROUNDS

#: The command that runs :func:`.cli.main`, from a checkout: its name in help and in ``--json``.
PROG = "python asv_bench/bench.py"

#: ``--repeat``'s default for the tables that time each contestant in a block.
BLOCK_REPEAT = 7


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Median milliseconds of every available backend, the peers and the "
        "copy floor on performance.md's standard cases, measured in one process. "
        f"Peers that are not installed are skipped, with what to install ({BENCH_EXTRA}).",
    )
    _table_options(parser)
    _dask_options(parser.add_argument_group("--library dask"))
    _other_tables(parser)
    return parser


def _table_options(parser: argparse.ArgumentParser) -> None:
    """What the standard and library tables time, and how."""
    parser.add_argument(
        "--case",
        action="append",
        choices=(*ALL_CASE_NAMES, *ND_CASE_NAMES),
        help="repeatable; the ND cases (with --nd): " + ", ".join(ND_CASE_NAMES),
    )
    parser.add_argument(
        "--reduction",
        action="append",
        choices=ROW_KINDS,
        help="repeatable (default: none, add, max, and gather in the standard table): "
        "gather is GatherElements of the case's data and indices against torch.gather",
    )
    parser.add_argument(
        "--mode",
        action="append",
        choices=MODES,
        help="repeatable (default: both): new, a new array per call; in-place, a data array "
        "of the benchmark's own updated by every call (scatterx's out=data, torch's "
        "Tensor.scatter_, NumPy's put_along_axis and ufunc.at on data itself)",
    )
    parser.add_argument(
        "--numba-compile",
        choices=NUMBA_COMPILE_MODES,
        default="wait",
        help="how automatic choice meets numba code not compiled yet, in this process and "
        "the workers it starts (SCATTERX_NUMBA_COMPILE): wait (the default) times compiled "
        "code; background leaves a call to numpy while numba compiles",
    )
    parser.add_argument("--size", type=float, default=1.0, help="scale of the shapes")
    parser.add_argument(
        "--repeat",
        type=int,
        help=f"timed calls per contestant: in each round of the standard and ONNX tables "
        f"(default {CALLS}), in a block elsewhere (default {BLOCK_REPEAT})",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=ROUNDS,
        help="rounds of the standard and ONNX tables: every contestant in turn, an idle "
        "pause between turns and between rounds; the spread is over the round medians",
    )
    parser.add_argument("--backend", action="append", help="backends to time (default: all)")
    parser.add_argument(
        "--library",
        action="append",
        choices=LIBRARIES,
        help="repeatable (default: numpy). numpy: the table of backends, peers and copy floor; "
        "torch, jax: scatterx on that library's CPU arrays against the same call on NumPy "
        "arrays and against the library's own scatter, and the 3x3 call on both; dask: "
        "the lazy call on Dask arrays (persist, compute) against the numba call on the same "
        "NumPy arrays, then the scaling case on a LocalCluster",
    )


def _dask_options(dask: argparse._ArgumentGroup) -> None:
    """The Dask table's cases and clusters."""
    dask.add_argument(
        "--dask-chunk-size",
        default=CHUNK_SIZE,
        metavar="SIZE",
        help="dask's array.chunk-size for the 'auto' dimensions (the scatter axis is whole) "
        "and the scaling case's blocks of rows (default: %(default)s)",
    )
    dask.add_argument(
        "--dask-scaling-gib",
        type=float,
        default=ScalingConfig.gib,
        metavar="GIB",
        help="the scaling case's float32 data in GiB, generated on the workers "
        "(default: %(default)s; 0 skips the case)",
    )
    dask.add_argument(
        "--dask-memory-limit",
        default=ScalingConfig.memory_limit,
        metavar="SIZE",
        help="each worker's memory limit in the scaling case (default: %(default)s)",
    )
    dask.add_argument(
        "--dask-workers",
        type=int,
        action="append",
        metavar="N",
        help="repeatable: a LocalCluster of N one-thread worker processes for the scaling "
        "case (default: 1 and 2)",
    )
    dask.add_argument(
        "--dask-along",
        action="append",
        metavar="N,M,U,R",
        help="repeatable: the along-axis case (scatterx_bench.dask_along): N float32 elements "
        "in M chunks along the axis, U updates (add) in R chunks, on the threaded scheduler "
        "and on a LocalCluster of each --dask-workers size (default: 2), and the numba call",
    )


def _other_tables(parser: argparse.ArgumentParser) -> None:
    """The 3x3 timing, the training and ONNX tables, and what a run writes besides."""
    parser.add_argument(
        "--small-calls",
        type=int,
        default=5000,
        metavar="N",
        help="calls per round of the 3x3 timing of --library torch|jax, fewer where they "
        "would take over 50 ms (0 skips it)",
    )
    parser.add_argument(
        "--grad",
        action="store_true",
        help="only the training table: forward + backward of scatter add on torch CPU tensors "
        "(embedding-grad, message-passing) against torch.scatter_reduce and its autograd",
    )
    parser.add_argument(
        "--grad-compiler",
        default="inductor",
        metavar="BACKEND",
        help="torch.compile's backend for the compiled step of --grad (inductor; aot_eager "
        "compiles nothing, quickly)",
    )
    parser.add_argument(
        "--onnx",
        action="store_true",
        help="only the ONNX table: a one-node model of each case through onnx's "
        "ReferenceEvaluator with scatterx.onnx.ops and without, and onnxruntime, against "
        "the direct scatterx.scatter_elements call",
    )
    parser.add_argument(
        "--hand",
        action="store_true",
        help="only the hand-loop table: numba against a hand-written loop of each case, "
        "reduction and mode (scatterx_bench.hand), its bits checked first, and against "
        "the fastest peer",
    )
    parser.add_argument(
        "--nd",
        action="store_true",
        help="only the ND table: scatter_nd and gather_nd on the ND cases (default: all; "
        "reduction add) in each mode, against onnxruntime (default threads and one thread) "
        "and torch's row calls, each result checked against the exact one, each peer's "
        "time over numba's set against issue 45's targets",
    )
    parser.add_argument(
        "--peer",
        action="append",
        choices=(*CPU_PEERS, ONNXRUNTIME_ONE_THREAD),
        help="repeatable: the peers of --hand and --nd (default: all of each)",
    )
    parser.add_argument(
        "--onnx-reference-repeat",
        type=int,
        default=1,
        metavar="N",
        help="timed calls of the plain ReferenceEvaluator, a Python loop over every update "
        "(seconds per call at full size; default: %(default)s)",
    )
    parser.add_argument(
        "--json", metavar="FILE", help="also write the run (times, command, machine)"
    )
    parser.add_argument(
        "--plot", metavar="FILE.png", help=f"also draw the times (needs matplotlib: {BENCH_EXTRA})"
    )
