"""The in-place mode of the benchmarks: what each contestant computes, and how it is shown.

Times are never asserted (performance.md): these check that an in-place call of every
contestant computes what its new-array call computes, on data of its own, call after call;
and that the printed table and the docs' table sum the ratios up per mode.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import scatterx
from scatterx.testing import reference_scatter_elements
from scatterx_bench.base import BenchCase, Unavailable
from scatterx_bench.cases import (
    CPU_PEERS,
    IN_PLACE_NOTES,
    build_call,
    in_place_case,
    make_call,
    make_case,
    spec_example,
)
from scatterx_bench.report import StandardRow
from scatterx_bench.table import print_table

TINY = 1 / 512  # as in test_cli.py: a few thousand updates
CONTESTANTS = ("numpy", *CPU_PEERS)  # numba left out: its compiles would dominate the suite
WRITES_IN_PLACE = ("numpy", "torch", "numpy-peer")  # onnxruntime returns a new array
DOCS_EXT = Path(__file__).parents[1] / "docs" / "_ext" / "bench_table.py"


def _in_place_then_new(contestant: str, case: BenchCase, reduction: str) -> tuple[Any, ...]:
    """Two in-place runs of ``contestant`` on its own data, and a new-array run of the same
    inputs (with the in-place updates) on a fresh copy; skipped where it cannot run."""
    inputs = in_place_case(case, reduction)
    try:
        in_place = build_call(contestant, case, reduction, "in-place")
        new = build_call(contestant, inputs, reduction, "new")
        first = np.asarray(in_place()).copy()  # the next run updates the array itself
    except Unavailable as why:
        pytest.skip(str(why))
    second = np.asarray(in_place())
    return inputs, first, second, np.asarray(new())


@pytest.mark.parametrize("contestant", CONTESTANTS)
@pytest.mark.parametrize("reduction", scatterx.REDUCTIONS)
def test_in_place_computes_the_new_array_call_on_data_of_its_own(
    contestant: str, reduction: str
) -> None:
    case = make_case("last-axis-sparse", TINY)
    pristine = case.data.copy()
    inputs, first, second, new = _in_place_then_new(contestant, case, reduction)
    where = f"{contestant} {reduction}"
    np.testing.assert_array_equal(first, new, err_msg=where)  # the same algorithm, the same bits
    np.testing.assert_array_equal(case.data, pristine, err_msg=f"{where}: the case's data")
    expected = reference_scatter_elements(*inputs.arrays, axis=inputs.axis, reduction=reduction)
    np.testing.assert_allclose(first, expected, rtol=1e-5, err_msg=where)
    if contestant in WRITES_IN_PLACE:  # the second run starts where the first left off
        again = reference_scatter_elements(
            first, inputs.indices, inputs.updates, axis=inputs.axis, reduction=reduction
        )
        np.testing.assert_allclose(second, again, rtol=1e-5, err_msg=f"{where}, second run")
        if reduction in ("add", "mul"):
            assert not np.array_equal(second, first), f"{where}: the second run changed nothing"
    else:
        np.testing.assert_array_equal(second, first, err_msg=where)


@pytest.mark.parametrize("contestant", CONTESTANTS)
def test_in_place_computes_the_spec_example(contestant: str) -> None:
    case = spec_example()
    inputs, first, _, _ = _in_place_then_new(contestant, case, "add")
    expected = reference_scatter_elements(*inputs.arrays, axis=0, reduction="add")
    np.testing.assert_array_equal(first, expected)


def test_in_place_mul_keeps_data_normal_call_after_call() -> None:
    # 64 updates a bin: with the case's own updates in [0.5, 1.5], the products would reach
    # float32's subnormals from about the 15th call (half of them by the 35th).
    case = make_case("1d-histogram", TINY)
    assert case.indices.size / case.data.size == 64
    call = make_call("numpy-peer", case, "mul", "in-place")
    for _ in range(200):
        data = call()
    assert np.all(np.abs(data) >= np.finfo(np.float32).tiny)
    assert np.all(np.isfinite(data))
    updates = in_place_case(case, "mul").updates
    assert updates.dtype == np.float32
    assert np.all(np.abs(updates - 1) <= 1 / 2048)
    np.testing.assert_array_equal(in_place_case(case, "add").updates, case.updates)


def test_copy_floor_in_place_copies_indices_and_updates_only() -> None:
    case = make_case("last-axis-sparse", TINY)
    copied = build_call("copy-floor", case, "none", "in-place")()
    np.testing.assert_array_equal(copied, case.indices)
    assert build_call("copy-floor", case, "none", "new")().shape == case.data.shape


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown mode 'inplace'; the modes are new, in-place"):
        build_call("numpy", spec_example(), "none", "inplace")  # type: ignore[arg-type]


def _rows() -> list[StandardRow]:
    """numba 2x and 4x the fastest peer in place, 1x and 3x new."""
    return [
        StandardRow("c", "add", "new", {"numba": 2.0, "torch": 2.0, "numpy-peer": 3.0}),
        StandardRow("c", "add", "in-place", {"numba": 1.0, "torch": 2.0}),
        StandardRow("c", "max", "new", {"numba": 1.0, "onnxruntime": 3.0}),
        StandardRow("c", "max", "in-place", {"numba": 0.5, "onnxruntime": 2.0}),
    ]


def test_the_table_sums_the_ratios_up_per_mode(capsys: pytest.CaptureFixture[str]) -> None:
    print_table(_rows(), ["numba", "onnxruntime", "torch", "numpy-peer"])
    lines = capsys.readouterr().out.splitlines()
    row = ["c", "add", "in-place", "1.00", "-", "2.00", "-", "2.00x", "torch", "0.50<"]
    assert lines[2].split() == row
    assert lines[3].split()[-3:] == ["3.00x", "onnxruntime", "-"]
    assert lines[5] == (
        "median ms; numba vs fastest peer, new: geometric mean 1.73x, lowest 1.00x; "
        "numba vs fastest peer, in-place: geometric mean 2.83x, lowest 2.00x"
    )
    assert lines[6].startswith("- numba vs fastest peer: that peer's median over numba's")
    assert any(line.startswith("- in place: every contestant updates") for line in lines)


def test_the_table_marks_cells_short_of_issue_46(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        StandardRow("c", "gather", "new", {"numba": 2.0, "torch": 1.0}),
        StandardRow("c", "gather", "in-place", {"numba": 2.2, "torch": 4.4}),
    ]
    print_table(rows, ["numba", "torch"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[-3:] == ["0.50x", "torch<", "-"]  # slower than torch.gather
    assert lines[2].split()[-3:] == ["2.00x", "torch", "1.10>"]  # in place over 1.05x new


def _docs_extension() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_table", DOCS_EXT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(rows: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    machine = {"cpus": 2, "cpu_model": "cpu", "platform": "linux", "python": "3.11"}
    return {
        "command": "python asv_bench/bench.py",
        "unit": "ms",
        "statistic": "median",
        "machine": machine,
        "versions": {"numpy": "2"},
        "columns": ["numba", "onnxruntime", "torch", "numpy-peer"],
        "peers": list(CPU_PEERS),
        "rows": rows,
        **more,
    }


@pytest.mark.skipif(not DOCS_EXT.exists(), reason="the docs are not in this tree")
def test_docs_table_renders_records_with_and_without_modes() -> None:
    bench_table = _docs_extension().bench_table
    rows = [row._asdict() for row in _rows()]
    text = bench_table(_record(rows, modes=["new", "in-place"], notes=list(IN_PLACE_NOTES)))
    assert "| case | reduction | mode | numba |" in text
    assert "| numba vs fastest peer | in place/new |" in text
    assert "| c | add | in-place | 1.00 | - | 2.00 | - | 2.00x torch | 0.50 |" in text
    assert "| c | max | new | 1.00 | 3.00 | - | - | 3.00x onnxruntime | - |" in text
    assert "new: geometric mean 1.73x, lowest 1.00x; in-place: geometric mean 2.83x" in text
    assert f"- {IN_PLACE_NOTES[1]}." in text
    # A record made before the modes: no mode column, one summary, as it was rendered.
    old = [{k: v for k, v in row.items() if k != "mode"} for row in rows[::2]]
    text = bench_table(_record(old))
    assert "| case | reduction | numba |" in text
    assert "| c | max | 1.00 | 3.00 | - | - | 3.00x onnxruntime |" in text
    assert "peer of each row: geometric mean 1.73x, lowest 1.00x (peers:" in text
    assert "in place" not in text
