"""The command line: backends, check (and its exit status on a wrong backend), bench."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import scatterx
import scatterx_bench
import scatterx_numba
from _backends import UnavailableBackend, WrongBackend
from _subprocess import run_python
from scatterx._cli import run_check
from scatterx.testing import LIBRARIES, _libraries, matrix_cases, reference_scatter_elements
from scatterx.testing._libraries import library
from scatterx.testing._onnx_cases import onnx_unavailable
from scatterx_bench import cli as bench_cli
from scatterx_bench.base import MODES, NUMBA_COMPILE, BenchCase, Unavailable, numba_compile
from scatterx_bench.cases import (
    CASE_NAMES,
    CPU_PEERS,
    IN_PLACE_NOTES,
    SIZES,
    backend_from_numpy,
    make_call,
    make_case,
    spec_example,
)
from scatterx_bench.cli import main as bench_main


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scatterx", *args], capture_output=True, text=True, check=False
    )


def test_backends_lists_numpy_with_its_status() -> None:
    result = _run("backends")
    assert result.returncode == 0
    numpy_row = next(line for line in result.stdout.splitlines() if line.startswith("numpy "))
    assert "numpy:ndarray" in numpy_row
    assert "available" in numpy_row


def _installed_libraries() -> list[str]:
    return [name for name in LIBRARIES if library(name).available() is None]


def _header(stdout: str) -> list[str]:
    return next(line for line in stdout.splitlines() if line.startswith("case family")).split()


def _rows(stdout: str) -> dict[str, list[str]]:
    """The family table: each family's cells, by family."""
    lines = stdout.splitlines()
    first = next(n for n, line in enumerate(lines) if line.startswith("case family")) + 2
    last = next(n for n, line in enumerate(lines) if line.startswith("total "))
    return {line.split()[0]: line.split()[1:] for line in lines[first : last + 1]}


def test_check_passes_on_numpy_and_prints_the_family_table() -> None:
    result = _run("check", "--backend", "numpy")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = _rows(result.stdout)
    assert rows["onnx-node"][0] == "7/0/0"
    assert rows["gather-onnx-node"][0] == "3/0/0"  # the gather cases, in families of their own
    assert result.stdout.rstrip().endswith("OK: 0 failure(s)")
    # A column for the backend's own arrays, one through each installed array library, and
    # one of one-node models in onnx's ReferenceEvaluator where onnx is installed.
    columns = ["numpy", *(f"numpy+{name}" for name in _installed_libraries())]
    if onnx_unavailable() is None:
        columns.append("numpy+onnx")
        assert rows["onnx-node"][-1] == "7/0/0"
    assert _header(result.stdout) == ["case", "family", *columns]


def test_check_library_chooses_the_columns() -> None:
    if library("torch").available() is not None:
        pytest.skip(str(library("torch").available()))
    result = _run("check", "--backend", "numpy", "--library", "torch", "--library", "native")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _header(result.stdout) == ["case", "family", "numpy+torch", "numpy"]
    assert "checking numpy+torch on 1" in result.stderr


def test_check_refuses_an_unknown_library() -> None:
    result = _run("check", "--backend", "numpy", "--library", "numpyy")
    assert result.returncode == 2
    assert "unknown array library 'numpyy'; choose from native, torch, jax" in result.stdout
    assert result.stdout.rstrip().endswith("array_api_strict, onnx")


def test_check_fails_a_named_library_that_is_not_installed(
    monkeypatch: pytest.MonkeyPatch, clean_selection: None
) -> None:
    monkeypatch.setitem(_libraries._MODULES, "torch", "scatterx_no_such_module")
    _libraries._availability.cache_clear()
    try:
        out = io.StringIO()
        assert run_check(["numpy"], out=out, libraries=["native", "torch"]) == 1
    finally:
        _libraries._availability.cache_clear()
    lines = out.getvalue().splitlines()
    why = "torch is unavailable: torch is not installed (pip install torch)"
    assert f"FAILED numpy+torch: {why}" in lines
    assert lines[-1] == "FAILED: 1 failure(s)"  # once for the column, not once per case


def test_check_fails_a_named_backend_that_is_unavailable(clean_selection: None) -> None:
    scatterx.register_backend(UnavailableBackend())
    out = io.StringIO()
    assert run_check(["never"], out=out, libraries=["native", "torch"]) == 1
    lines = out.getvalue().splitlines()
    assert "FAILED never: never is unavailable: it never is" in lines
    assert lines[-1] == "FAILED: 1 failure(s)"  # once for the backend, not once per column


def test_check_fails_a_wrong_backend(clean_selection: None) -> None:
    scatterx.register_backend(WrongBackend("off-by-one", lambda answer, _: answer + np.float32(1)))
    out = io.StringIO()
    assert run_check(["off-by-one"], out=out) == 1
    text = out.getvalue()
    assert "FAILED off-by-one spec-example-1" in text
    for name in _installed_libraries():  # through each array library too
        assert f"FAILED off-by-one+{name} spec-example-1" in text
    if onnx_unavailable() is None:  # and through an ONNX model
        assert "FAILED off-by-one+onnx spec-example-1" in text
    assert "FAILED: " in text.splitlines()[-1]


def _operations(stdout: str) -> dict[str, list[str]]:
    """The table by operation: each operation's cells, and the total's."""
    lines = stdout.split("the same, by operation")[1].splitlines()
    first = next(n for n, line in enumerate(lines) if line.startswith("operation")) + 2
    last = next(n for n, line in enumerate(lines) if line.startswith("total "))
    return {line.split()[0]: line.split()[1:] for line in lines[first : last + 1]}


def test_check_reports_the_nd_operations_by_family_and_by_operation(
    clean_selection: None,
) -> None:
    count = Counter(case.operation for case in matrix_cases())
    out = io.StringIO()
    assert run_check(["numpy"], out=out, libraries=["native"]) == 0
    rows, operations = _rows(out.getvalue()), _operations(out.getvalue())
    assert rows["scatter-nd-generated"] == ["175/0/0"]
    assert rows["gather-nd-generated"] == ["72/0/0"]
    assert list(operations) == [
        "scatter_elements",
        "gather_elements",
        "scatter_nd",
        "gather_nd",
        "total",
    ]
    # One case of each mixes libraries: nothing to mix on NumPy's own arrays.
    assert operations["scatter_nd"] == [f"{count['scatter_nd'] - 1}/0/1"]
    assert operations["gather_nd"] == [f"{count['gather_nd'] - 1}/0/1"]
    # A backend without scatter_nd and gather_nd: their cases skipped, nothing failed.
    scatterx.register_backend(WrongBackend("scatters-only", lambda answer, _: answer))
    out = io.StringIO()
    assert run_check(["scatters-only"], out=out, libraries=["native"]) == 0
    operations = _operations(out.getvalue())
    assert operations["scatter_nd"] == [f"0/0/{count['scatter_nd']}"]
    assert operations["gather_nd"] == [f"0/0/{count['gather_nd']}"]


# The harness's command, python asv_bench/bench.py, and the cases and contestants every
# benchmark harness shares. Times are never asserted: these check what runs, what is skipped
# and what is computed.

TINY = 1 / 512  # the standard cases with a few thousand updates: seconds, not minutes
CONTESTANTS = ("numpy", *CPU_PEERS)  # numba left out: its compiles would dominate the suite
BENCH_PY = Path(scatterx_bench.__file__).resolve().parents[1] / "bench.py"


def test_bench_help_names_the_options() -> None:
    # python asv_bench/bench.py runs as a script: Python puts asv_bench on sys.path itself.
    result = subprocess.run(
        [sys.executable, str(BENCH_PY), "--help"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python asv_bench/bench.py")
    for option in ("--case", "--reduction", "--mode", "--size", "--json", "--plot"):
        assert option in result.stdout


def test_import_scatterx_leaves_the_bench_alone() -> None:
    # The harness is not in the installed package, and neither importing scatterx nor its
    # command line loads any of it.
    code = (
        "import sys, importlib.util, scatterx, scatterx.__main__\n"
        "print(importlib.util.find_spec('scatterx._bench'), [m for m in sys.modules if "
        "m.startswith(('scatterx._bench', 'scatterx_bench')) or m == 'matplotlib'])"
    )
    assert run_python(code).strip() == "None []"


def test_scatterx_has_no_bench_command_and_names_the_harness() -> None:
    result = _run("bench", "--help")
    assert result.returncode == 2  # argparse's usage error
    assert result.stdout == ""
    error = result.stderr.splitlines()
    assert error[0].startswith("usage: python -m scatterx")
    assert error[1] == (
        "python -m scatterx: error: 'bench' left the installed scatterx: from a checkout, "
        "run python asv_bench/bench.py"
    )
    assert "python asv_bench/bench.py --help" in " ".join(_run("--help").stdout.split())


def test_bench_runs_and_prints_a_row_per_case_reduction_and_mode(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record = tmp_path / "run.json"
    argv = ["--case", "last-axis-sparse", "--reduction", "add", "--reduction", "max"]
    argv += ["--size", str(TINY), "--repeat", "1", "--backend", "numpy", "--json", str(record)]
    assert bench_main(argv) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:5] == ["case", "red", "mode", "copy-floor", "numpy"]
    # Both modes by default, each row with its cells: one run gives the whole table.
    assert [line.split()[:3] for line in table[1:5]] == [
        ["last-axis-sparse", "add", "new"],
        ["last-axis-sparse", "add", "in-place"],
        ["last-axis-sparse", "max", "new"],
        ["last-axis-sparse", "max", "in-place"],
    ]
    # A cell in every column ("numba vs fastest peer" and "in place/new" are one cell each,
    # "-" without numba); a cell is a median and its spread ("0.12 ±6%"), the columns two
    # spaces apart at least.
    columns = re.split(r"\s{2,}", table[0].strip())
    assert columns[-2:] == ["numba vs fastest peer", "in place/new"]
    assert all(len(re.split(r"\s{2,}", line.strip())) == len(columns) for line in table[1:5])
    timed = re.split(r"\s{2,}", table[1].strip())[3:-2]
    assert all(re.fullmatch(r"[\d.]+ ±\d+%!?", cell) for cell in timed)
    assert any("onnxruntime cannot write into its input" in line for line in table)
    saved = json.loads(record.read_text(encoding="utf-8"))
    assert [(row["reduction"], row["mode"]) for row in saved["rows"]] == [
        ("add", "new"),
        ("add", "in-place"),
        ("max", "new"),
        ("max", "in-place"),
    ]
    assert saved["modes"] == list(MODES)
    assert saved["notes"] == list(IN_PLACE_NOTES)


def test_bench_mode_chooses_the_rows(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    record = tmp_path / "run.json"
    argv = ["--case", "1d-histogram", "--reduction", "add", "--mode", "new"]
    argv += ["--size", str(TINY), "--repeat", "1", "--backend", "numpy", "--json", str(record)]
    assert bench_main(argv) == 0
    table = capsys.readouterr().out.splitlines()
    assert [line.split()[:3] for line in table[1:2]] == [["1d-histogram", "add", "new"]]
    assert not any("in-place" in line for line in table)
    assert not any("onnxruntime cannot write" in line for line in table)  # no in-place notes
    saved = json.loads(record.read_text(encoding="utf-8"))
    assert (saved["modes"], saved["notes"]) == (["new"], [])


def test_bench_without_the_peers_runs_the_rest_and_names_the_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("torch", "onnx", "onnxruntime"):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    argv = ["--case", "1d-histogram", "--reduction", "add", "--size", str(TINY)]
    assert bench_main([*argv, "--repeat", "1", "--backend", "numpy"]) == 0
    out = capsys.readouterr()
    assert "skipped torch: torch is not installed (pip install torch)" in out.err
    assert "skipped onnxruntime: onnxruntime is not installed (pip install 'scatterx[bench]')" in (
        out.err
    )
    assert out.out.splitlines()[0].split()[3:6] == ["copy-floor", "numpy", "numpy-peer"]


def test_bench_plot_without_matplotlib_stops_before_timing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(SystemExit) as stopped:
        bench_main(["--plot", "run.png"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "--plot needs matplotlib: pip install 'scatterx[bench]'" in err
    assert "bench [1/" not in err  # nothing was timed


@pytest.mark.parametrize(
    ("argv", "mode"),
    [([], "wait"), (["--grad"], "wait"), (["--numba-compile", "background"], "background")],
)
def test_bench_sets_the_numba_compile_mode_for_its_run_only(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], mode: str
) -> None:
    # The run's processes inherit the mode; importing the harness set none, and the run
    # leaves the caller's as it was.
    seen: list[str | None] = []

    def record(*args: Any) -> int:
        seen.append(os.environ.get(NUMBA_COMPILE))
        return 0

    monkeypatch.setattr(bench_cli, "_run", record)
    monkeypatch.setattr(bench_cli, "_grad", record)
    monkeypatch.setenv(NUMBA_COMPILE, "background")
    assert bench_main(argv) == 0
    assert seen == [mode]
    assert os.environ[NUMBA_COMPILE] == "background"
    monkeypatch.delenv(NUMBA_COMPILE)
    assert bench_main(argv) == 0
    assert seen == [mode, mode]
    assert NUMBA_COMPILE not in os.environ


def test_bench_refuses_an_unknown_numba_compile_mode() -> None:
    with pytest.raises(SystemExit):
        bench_main(["--numba-compile", "later"])
    with pytest.raises(ValueError, match="got 'later'"), numba_compile("later"):
        pass


def test_a_backend_gets_its_arrays_through_its_entry_point() -> None:
    from_numpy = backend_from_numpy("numpy")
    array = np.arange(3.0)
    assert from_numpy is not None
    assert from_numpy(array) is array
    assert backend_from_numpy("cupy") is not None  # its entry point, with or without a GPU
    assert backend_from_numpy("no-such-backend") is None


@pytest.mark.parametrize("name", CASE_NAMES)
def test_a_case_is_built_from_its_name_alone(name: str) -> None:
    first = make_case(name, TINY)
    make_case(CASE_NAMES[-1], TINY)  # building another case in between changes nothing
    again = make_case(name, TINY)
    assert all(np.array_equal(a, b) for a, b in zip(first.arrays, again.arrays, strict=True))
    # asv's small size still hands the call to numba in automatic choice.
    assert make_case(name, SIZES["small"]).indices.size >= scatterx_numba.SMALL_CALL_UPDATES


def _check_contestants(case: BenchCase, reduction: str, rtol: float = 0.0) -> None:
    """Every contestant installed here gives the oracle's answer (to ``rtol``)."""
    expected = reference_scatter_elements(*case.arrays, axis=case.axis, reduction=reduction)
    for contestant in CONTESTANTS:
        try:
            call = make_call(contestant, case, reduction)
        except Unavailable:
            continue
        got = np.asarray(call())
        np.testing.assert_allclose(got, expected, rtol=rtol, err_msg=f"{contestant} {reduction}")


@pytest.mark.parametrize("reduction", scatterx.REDUCTIONS)
def test_every_contestant_computes_the_spec_example(reduction: str) -> None:
    _check_contestants(spec_example(), reduction)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_every_contestant_computes_the_standard_cases(name: str) -> None:
    case = make_case(name, TINY)
    _check_contestants(case, "max")
    _check_contestants(case, "add", rtol=1e-5)  # sums in another order
