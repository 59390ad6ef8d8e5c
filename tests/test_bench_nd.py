"""The ScatterND and GatherND benchmarks: their cases, what each contestant computes in each
mode, the check against the exact result, and the ``--nd`` table's verdicts.

Times are never asserted (performance.md); the verdicts are tested on times given by hand.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from typing import Any

import numpy as np
import pytest

from scatterx.testing import assert_bitwise_equal, reference_gather_nd, reference_scatter_nd
from scatterx_bench.base import MODES, BenchCase, Mode, Unavailable
from scatterx_bench.cases import ND_BACKENDS, ND_PEERS, first_call, make_case
from scatterx_bench.cli import main
from scatterx_bench.nd import ND_CASE_NAMES, ND_CASES, exact_nd, max_difference
from scatterx_bench.nd_bench import TARGETS, NDCell, check, shown_time
from scatterx_bench.peers import ONNXRUNTIME_ONE_THREAD
from scatterx_bench.timing import Timed

TINY = 1 / 512  # about a thousand rows of the embedding table
#: The peers whose results are the sequential loop's bits: torch's index_add and
#: index_reduce on the CPU walk the rows in order; onnxruntime on one thread does.
EXACT_PEERS = (ONNXRUNTIME_ONE_THREAD, "torch")


def _reference(case: BenchCase, reduction: str) -> Any:
    if case.op == "gather_nd":
        return reference_gather_nd(case.data, case.indices)
    return reference_scatter_nd(*case.arrays, reduction)


def _first(contestant: str, case: BenchCase, reduction: str, mode: Mode) -> tuple[Any, Any]:
    try:
        return first_call(contestant, case, reduction, mode)
    except Unavailable as why:
        pytest.skip(str(why))


@pytest.mark.parametrize("name", ND_CASE_NAMES)
def test_an_nd_case_is_built_from_its_name_alone(name: str) -> None:
    first = make_case(name, TINY)
    make_case("square-random", TINY)  # building another case in between changes nothing
    again = make_case(name, TINY)
    for a, b in zip(first.arrays, again.arrays, strict=True):
        assert (a is None and b is None) or np.array_equal(a, b)
    spec = ND_CASES[name]
    assert first.op == spec.op
    assert first.indices.shape[-1] == spec.depth
    assert (first.updates is None) == (spec.op == "gather_nd")
    full_rows = spec.rows if not spec.scaled else round(spec.rows * TINY)
    assert first.indices.shape == (full_rows, spec.depth)


def test_the_embedding_gradient_case_has_shared_rows() -> None:
    case = make_case("embedding-grad-nd", TINY)
    assert case.data.shape[1:] == (80,)
    assert case.updates.shape == (case.indices.shape[0], 80)
    assert np.unique(case.indices).size < case.indices.shape[0]  # rows that meet


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
@pytest.mark.parametrize("name", ND_CASE_NAMES)
def test_the_exact_result_is_the_contracts_loop(name: str, reduction: str) -> None:
    case = make_case(name, 1 / 4096)  # the loop oracle is slow
    assert_bitwise_equal(exact_nd(case, reduction), _reference(case, reduction))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("contestant", [*ND_BACKENDS, *ND_PEERS])
@pytest.mark.parametrize("name", ND_CASE_NAMES)
def test_every_contestant_computes_the_nd_cases(name: str, contestant: str, mode: Mode) -> None:
    case = make_case(name, TINY)
    pristine = case.data.copy()
    reduction = "none" if case.op == "gather_nd" else "add"
    call, first = _first(contestant, case, reduction, mode)
    expected = exact_nd(case, reduction)
    got = np.asarray(first).copy()  # in place, the next call updates it
    if contestant in (*ND_BACKENDS, *EXACT_PEERS):
        assert_bitwise_equal(got, expected)
    elif case.indices.shape[0] < 4:  # onnxruntime's threads meet no shared row here
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_array_equal(case.data, pristine)  # each contestant on data of its own
    second = np.asarray(call())
    updates_again = mode == "in-place" and case.op == "scatter_nd"
    if updates_again and not contestant.startswith("onnxruntime"):
        assert_bitwise_equal(second, reference_scatter_nd(got, case.indices, case.updates, "add"))
    elif contestant in (*ND_BACKENDS, *EXACT_PEERS):
        assert_bitwise_equal(second, expected)


def test_a_gather_in_place_writes_into_a_result_of_its_own() -> None:
    case = make_case("row-gather-nd", TINY)
    call, first = _first("numba", case, "none", "in-place")
    assert call() is first
    assert not np.shares_memory(first, case.data)


def test_onnxruntime_runs_the_nd_ops_on_the_threads_it_is_given() -> None:
    pytest.importorskip("onnxruntime")
    case = make_case("small-nd", 1.0)
    for peer in ("onnxruntime", ONNXRUNTIME_ONE_THREAD):
        assert_bitwise_equal(np.asarray(_first(peer, case, "max", "new")[1]), exact_nd(case, "max"))


def test_the_check_finds_the_largest_difference_and_a_sum_that_varies() -> None:
    exact = np.zeros((3, 2), dtype=np.float32)
    results = iter([exact + 0.25, exact + 0.5])
    checked = check(lambda: next(results), exact, exact, 3)
    assert (checked.max_difference, checked.varies) == (0.5, True)
    assert str(checked) == "0.5, varies"
    steady = check(lambda: exact.copy(), exact, exact, 3)
    assert (steady.max_difference, steady.varies, str(steady)) == (0.0, False, "0")


def test_max_difference_refuses_another_shape() -> None:
    with pytest.raises(ValueError, match="shape"):
        max_difference(np.zeros(3), np.zeros(4))


def _timed(ms: float, spread: float = 0.01) -> Timed:
    return Timed(ms, spread, (ms,))


@pytest.mark.parametrize(
    ("peer_ms", "peer_spread", "verdict"),
    [(160.0, 0.01, "met"), (140.0, 0.01, "short"), (160.0, 0.5, "?")],
)
def test_a_cell_is_judged_against_issue_45s_target(
    peer_ms: float, peer_spread: float, verdict: str
) -> None:
    target = TARGETS["embedding-grad-nd", "add", "new"][ONNXRUNTIME_ONE_THREAD]
    assert target == 1.5
    timed = {"numba": _timed(100.0), ONNXRUNTIME_ONE_THREAD: _timed(peer_ms, peer_spread)}
    cell = NDCell("embedding-grad-nd", "scatter_nd", "add", "new", timed, {})
    assert cell.speedup(ONNXRUNTIME_ONE_THREAD) == pytest.approx(peer_ms / 100.0)
    assert cell.verdict(ONNXRUNTIME_ONE_THREAD) == verdict
    assert NDCell("small-nd", "scatter_nd", "add", "new", timed, {}).verdict("torch") == "-"


def test_the_nd_table_prints_both_modes_with_ratios_checks_and_verdicts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("onnxruntime")
    argv = ["--nd", "--case", "embedding-grad-nd", "--size", str(TINY), "--rounds", "2"]
    assert main([*argv, "--repeat", "1", "--backend", "numba"]) == 0
    out = capsys.readouterr().out
    titles = re.findall(r"^embedding-grad-nd add ([\w-]+): data float32", out, re.MULTILINE)
    assert titles == ["new", "in-place"]
    rows = re.findall(r"^  (onnxruntime-1t|onnxruntime|torch|numba)  .*$", out, re.MULTILINE)
    # A peer whose library is missing has no row (torch, in the README's environment).
    present = [p for p in ND_PEERS if p != "torch" or importlib.util.find_spec("torch")]
    assert rows == ["numba", *present] * 2
    for line in out.splitlines():
        if line.startswith("  onnxruntime-1t "):
            assert re.search(
                r" [\d.]+( us)? ±\d+%!? +0 +[\d.]+x +(1\.5|2\.0)x (met|short|\?)$", line
            )
    assert out.count("verdict: onnxruntime ") == 2
    assert "load average" in out


def test_a_short_call_shows_its_microseconds() -> None:
    assert shown_time(Timed(0.01234, 0.03, ())) == "12.34 us ±3%"
    assert shown_time(Timed(1.5, 0.25, ())) == "1.50 ±25%!"


@pytest.mark.parametrize(
    "argv",
    [
        ["--nd", "--case", "square-random"],
        ["--case", "embedding-grad-nd"],
        ["--nd", "--case", "embedding-grad-nd", "--case", "1d-histogram"],
        ["--nd", "--json", "x.json"],
    ],
)
def test_the_nd_cases_go_with_nd_only(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)


def test_without_torch_the_nd_table_skips_it_and_says_why(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # as if not installed
    argv = ["--nd", "--case", "small-nd", "--mode", "new", "--rounds", "1", "--repeat", "1"]
    assert main([*argv, "--backend", "numpy", "--peer", "torch"]) == 0
    captured = capsys.readouterr()
    assert "bench: skipped torch:" in captured.err
    assert "small-nd add new" in captured.out
