"""The conformance suite as pytest tests: every registered backend x every case.

Run it from this repository (``tests/test_conformance.py`` imports it) or on any installed
backend with ``pytest --pyargs scatterx.testing.conformance --require-backend NAME``.
"""

from __future__ import annotations

from typing import Any

import pytest

from scatterx import backends
from scatterx.testing import Case, all_cases, run_case
from scatterx.testing.plugin import skip_or_fail

CASES = all_cases()
BACKENDS = [record.name for record in backends()]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "conformance_backend" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("--scatterx-backend") or BACKENDS
        metafunc.parametrize("conformance_backend", chosen)


def _grouped(case: Case) -> Any:
    """``case`` with its xdist group: one dtype and reduction, so that with
    ``pytest -n N --dist loadgroup`` each compiled signature of a JIT backend is compiled
    by one worker, not by every worker that meets it."""
    return pytest.param(
        case, id=case.name, marks=pytest.mark.xdist_group(f"{case.dtype_key}-{case.reduction}")
    )


@pytest.mark.parametrize("case", [_grouped(case) for case in CASES])
def test_backend_matches_oracle(conformance_backend: str, case: Case, pytestconfig: Any) -> None:
    outcome = run_case(conformance_backend, case)
    if outcome.status == "skipped":
        if outcome.unavailable:
            skip_or_fail(pytestconfig, conformance_backend, outcome.detail)
        pytest.skip(outcome.detail)
    assert outcome.status == "passed", outcome.detail
