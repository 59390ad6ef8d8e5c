"""The table of ``--onnx``: a one-node model of each standard case through onnx's
ReferenceEvaluator with and without :data:`scatterx.onnx.ops`, and through onnxruntime,
against the same call made directly (:func:`scatterx.scatter_elements`)."""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

from scatterx import scatter_elements, use_backend

from .base import BenchCase, Call, Unavailable, require
from .cases import median_ms
from .peers import PEERS, _onnx_model
from .timing import cell, interleaved, legend

#: The columns of the table: the direct call, the evaluator with scatterx's operators, the
#: evaluator alone (its Python loop) and onnxruntime's CPU kernel.
DIRECT, WITH_SCATTERX, REFERENCE, ONNXRUNTIME = (
    "direct",
    "evaluator+scatterx",
    "evaluator",
    "onnxruntime",
)
ONNX_COLUMNS = (DIRECT, WITH_SCATTERX, REFERENCE, ONNXRUNTIME)


class OnnxRow(NamedTuple):
    """The median milliseconds of one case and reduction by column, and the spread of the
    columns timed in rounds."""

    case: str
    reduction: str
    times: dict[str, float]
    spreads: dict[str, float]


def _under(backend: str, call: Call) -> Call:
    """``call`` inside ``use_backend(backend)``: a named numba waits for its compile, where
    automatic choice would run numpy meanwhile."""

    def run() -> Any:
        with use_backend(backend):
            return call()

    return run


def _output(session: Any, feeds: dict[str, Any]) -> Any:
    """The model's one output (``run`` returns the list of the outputs asked for)."""
    (output,) = session.run(None, feeds)
    return output


def onnx_calls(case: BenchCase, reduction: str, backend: str) -> dict[str, Call]:
    """The calls of each column on ``case`` (NumPy arrays), none of them run yet; the
    direct call and the evaluator's operators on scatterx's ``backend``.

    onnxruntime is left out where it is not installed; :class:`Unavailable` where onnx is
    not.
    """
    require("onnx")
    from onnx.reference import ReferenceEvaluator

    import scatterx.onnx

    model = _onnx_model(case, reduction)
    feeds = {"data": case.data, "indices": case.indices, "updates": case.updates}
    with_ops = ReferenceEvaluator(model, new_ops=list(scatterx.onnx.ops))
    plain = ReferenceEvaluator(model)
    arrays, axis = case.arrays, case.axis
    calls: dict[str, Call] = {
        DIRECT: _under(backend, lambda: scatter_elements(*arrays, axis=axis, reduction=reduction)),
        WITH_SCATTERX: _under(backend, lambda: _output(with_ops, feeds)),
        REFERENCE: lambda: _output(plain, feeds),
    }
    try:
        calls[ONNXRUNTIME] = PEERS[ONNXRUNTIME](case, reduction, "new")
    except Unavailable as why:
        print(f"bench: skipped {ONNXRUNTIME}: {why}", file=sys.stderr, flush=True)
    return calls


def time_onnx_row(
    case: BenchCase,
    reduction: str,
    backend: str,
    timing: tuple[int, int],
    reference_repeat: int,
) -> OnnxRow:
    """Time every column on ``case``: the direct call, the evaluator with scatterx and
    onnxruntime interleaved in ``timing`` = (rounds, calls per round) (:mod:`.timing`); the
    plain evaluator, seconds a call, ``reference_repeat`` times in a block."""
    calls = onnx_calls(case, reduction, backend)
    reference = calls.pop(REFERENCE)
    timed = interleaved(calls, *timing)  # its untimed call: numba's compile, onnxruntime's
    times = {name: t.median_ms for name, t in timed.items()}
    times[REFERENCE] = median_ms(reference, reference_repeat, warm=False)  # compiles nothing
    spreads = {name: t.spread for name, t in timed.items()}
    return OnnxRow(case.name, reduction, times, spreads)


def print_onnx(rows: list[OnnxRow], backend: str) -> None:
    """The table: milliseconds by column, the speedup of scatterx's operators over the
    plain evaluator, and their time over the direct call's."""
    header = ["case", "reduction", *ONNX_COLUMNS, "evaluator/+scatterx", "+scatterx/direct"]
    lines = [header]
    for row in rows:
        cells = [
            cell(row.times[c], row.spreads.get(c)) if c in row.times else "-" for c in ONNX_COLUMNS
        ]
        ours = row.times[WITH_SCATTERX]
        lines.append(
            [
                row.case,
                row.reduction,
                *cells,
                f"{row.times[REFERENCE] / ours:.0f}x",
                f"{ours / row.times[DIRECT]:.2f}",
            ]
        )
    widths = [max(len(line[c]) for line in lines) for c in range(len(header))]
    print(
        f"median ms of a one-node ScatterElements model (opset 18); scatterx on {backend}; "
        + legend()
    )
    for n, line in enumerate(lines):
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))
        if n == 0:
            print("  ".join("-" * w for w in widths))
