"""``python asv_bench/bench.py --onnx``: the ONNX table runs, and each column computes the
case."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from scatterx.testing import assert_bitwise_equal, reference_scatter_elements
from scatterx_bench.cases import make_case
from scatterx_bench.cli import main
from scatterx_bench.onnx_bench import ONNX_COLUMNS, onnx_calls

pytest.importorskip("onnx")

TINY = 1 / 512


def test_onnx_table_has_a_row_per_case_and_reduction(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--onnx", "--size", str(TINY), "--repeat", "1", "--backend", "numpy"]
    assert main([*argv, "--case", "1d-histogram", "--reduction", "add", "--reduction", "max"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "scatterx on numpy" in lines[0]
    assert lines[1].split()[2:6] == list(ONNX_COLUMNS)
    rows = [line.split()[:2] for line in lines[3:]]
    assert rows == [["1d-histogram", "add"], ["1d-histogram", "max"]]


def test_onnx_table_takes_no_json() -> None:
    with pytest.raises(SystemExit):
        main(["--onnx", "--json", "x.json"])


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_every_column_computes_the_case(reduction: str) -> None:
    case = make_case("last-axis-sparse", TINY)
    calls = onnx_calls(case, reduction, "numpy")
    expected = reference_scatter_elements(*case.arrays, axis=case.axis, reduction=reduction)
    for name, call in calls.items():
        result = np.asarray(call())
        if name in ("direct", "evaluator+scatterx"):
            assert_bitwise_equal(result, expected)
        else:  # the peers, up to their order of summation
            np.testing.assert_allclose(result, expected, rtol=1e-5)


def test_without_onnx_the_table_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if not installed
    argv = ["--onnx", "--size", str(TINY), "--repeat", "1", "--case", "1d-histogram"]
    assert main(argv) == 1
    assert "bench: --onnx needs onnx:" in capsys.readouterr().err
