"""``python asv_bench/bench.py --library torch|jax``: what runs, what is skipped, what is computed.

Times are never asserted (performance.md): these check the tables' rows and columns, the
JSON record, and that every contestant on a library's arrays gives the oracle's answer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from scatterx.testing import reference_scatter_elements
from scatterx_bench.base import BenchCase
from scatterx_bench.cases import make_case, spec_example
from scatterx_bench.cli import main as bench_main
from scatterx_bench.libraries import (
    DONATED,
    PEER,
    arrays_of,
    in_layout_of,
    on,
    peer_call,
    require_library,
    scatterx_call,
    to_library,
)

TINY = 1 / 512  # as in test_cli.py: a few thousand updates
LIBRARIES = ("torch", "jax")


def _tiny_run(library: str, tmp_path: Path) -> list[str]:
    argv = ["--library", library, "--case", "last-axis-sparse", "--reduction", "add"]
    argv += ["--reduction", "max", "--size", str(TINY), "--repeat", "1", "--backend", "numpy"]
    argv += ["--small-calls", "5", "--json", str(tmp_path / "run.json")]
    assert bench_main(argv) == 0
    return argv


@pytest.mark.parametrize("library", LIBRARIES)
def test_bench_library_prints_its_table_and_the_3x3_call(
    library: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pytest.importorskip(library)
    _tiny_run(library, tmp_path)
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert (
        lines[0]
        == f"scatterx on {library} arrays against the same call on NumPy arrays (median ms)"
    )
    head = lines[1]
    for column in (on("numpy", library), on("numpy", "numpy"), f"{library}/numpy", PEER[library]):
        assert column in head, (column, out.err)
    assert [line.split()[:2] for line in lines[2:4]] == [
        ["last-axis-sparse", "add"],
        ["last-axis-sparse", "max"],
    ]
    assert not any(line.split()[2:].count("-") for line in lines[2:4]), out.out  # all timed
    assert f"numpy: {library}/numpy highest" in out.out
    small = lines[lines.index(next(line for line in lines if line.startswith("3x3"))) + 1 :]
    assert small[0].split() == ["backend", "on", "numpy", "on", library, f"{library}", "-", "numpy"]
    assert [line.split()[0] for line in small[1:3]] == ["(auto)", "numpy"]
    assert "copy-floor" not in out.out  # the standard table was not asked for

    saved = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert saved["rows"] == []
    run = saved["libraries"][library]
    assert [row["reduction"] for row in run["rows"]] == ["add", "max"]
    donated = {on("numpy", DONATED)} if library == "jax" else set()  # jit, data donated
    assert set(run["rows"][0]["times"]) == {
        on("numpy", library),
        on("numpy", "numpy"),
        PEER[library],
        *donated,
    }
    assert {on("(auto)", library), on("numpy", "numpy"), PEER[library]} <= set(
        run["spec_example_us"]
    )


def test_bench_numpy_and_a_library_print_both_tables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("torch")
    argv = ["--library", "numpy", "--library", "torch", "--case", "1d-histogram"]
    argv += ["--reduction", "add", "--size", str(TINY), "--repeat", "1", "--backend", "numpy"]
    assert bench_main([*argv, "--small-calls", "0"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:5] == ["case", "red", "mode", "copy-floor", "numpy"]
    assert "scatterx on torch arrays against the same call on NumPy arrays" in out
    assert "3x3" not in out  # --small-calls 0


def test_bench_library_not_installed_is_skipped_with_its_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # as if not installed
    argv = ["--library", "torch", "--case", "1d-histogram", "--size", str(TINY)]
    assert bench_main([*argv, "--repeat", "1", "--backend", "numpy"]) == 0
    out = capsys.readouterr()
    assert "skipped library torch: torch is not installed (pip install torch)" in out.err
    assert out.out.startswith("load average")  # no table


def test_bench_jax_leaves_64_bit_types_as_they_were(tmp_path: Path) -> None:
    jax = pytest.importorskip("jax")
    before = jax.config.read("jax_enable_x64")
    _tiny_run("jax", tmp_path)
    assert jax.config.read("jax_enable_x64") == before


def _check_on(library: str, case: BenchCase, reduction: str, rtol: float = 0.0) -> None:
    """scatterx's numpy backend and the peer, on ``library``'s arrays, give the oracle's answer."""
    pytest.importorskip(library)
    expected = reference_scatter_elements(*case.arrays, axis=case.axis, reduction=reduction)
    with arrays_of(library):
        moved = to_library(case, library)
        assert type(moved.data).__module__.startswith(library)  # jax arrays: jaxlib's
        assert [str(a.dtype).rpartition(".")[2] for a in moved.arrays] == [
            "float32",
            "int64",
            "float32",
        ]
        for name, call in (
            ("scatterx", scatterx_call("numpy", moved, reduction)),
            ("peer", peer_call(library, moved, reduction)),
        ):
            got = call()
            assert type(got).__module__.startswith(library), name
            np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol, err_msg=name)


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_contestants_on_a_library_compute_the_spec_example(library: str, reduction: str) -> None:
    _check_on(library, spec_example(), reduction)  # no duplicate index: set's order is moot


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("name", ["embedding-grad", "last-axis-sparse"])
def test_contestants_on_a_library_compute_the_standard_cases(library: str, name: str) -> None:
    case = make_case(name, TINY)
    _check_on(library, case, "max")
    _check_on(library, case, "add", rtol=1e-5)  # sums in another order


@pytest.mark.parametrize("library", LIBRARIES)
def test_the_numpy_side_of_a_row_has_the_librarys_layout(library: str) -> None:
    """square-transposed holds Fortran-ordered arrays: on torch (zero-copy) they stay so, and
    JAX makes C-ordered ones, so the NumPy call a row is compared with gets C-ordered copies
    there, and the same values."""
    pytest.importorskip(library)
    case = make_case("square-transposed", TINY)
    assert all(a.flags.f_contiguous and not a.flags.c_contiguous for a in case.arrays)
    with arrays_of(library):
        moved = to_library(case, library)
        twin = in_layout_of(case, library)
    for made, source, same in zip(moved.arrays, case.arrays, twin.arrays, strict=True):
        np.testing.assert_array_equal(same, source)
        if library == "jax":
            assert same.flags.c_contiguous
        else:
            assert same is source
            assert made.stride() == tuple(s // source.itemsize for s in source.strides)


def test_bench_help_names_the_library_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        bench_main(["--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert "--library {numpy,torch,jax,dask}" in out
    assert "--dask-workers N" in out
    assert "--small-calls N" in out


def test_an_unknown_library_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown library 'mxnet'"):
        require_library("mxnet")
