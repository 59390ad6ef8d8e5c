"""The conformance suite as pytest tests: every registered backend x array library x case,
of ``scatter_elements``, ``gather_elements``, ``scatter_nd`` and ``gather_nd``.

Run it from this repository (``tests/test_conformance.py`` imports it) or on any installed
backend with ``pytest --pyargs scatterx.testing.conformance --require-backend NAME``.

The matrix has an array-library dimension (contract.md, section 6): each case runs on a
backend's own arrays (``native``, its ``from_numpy``) and through each array library of
``scatterx.testing.LIBRARIES`` (PyTorch, JAX, array-api-strict): made in that library on
the device the backend serves (the CPU for NumPy-serving backends; a CUDA device for the
cupy backend, as ``tools/gpu_check.sh`` runs it), carried by scatterx to the backend,
compared bit for bit with the oracle, with the result's library, device and dtype checked
and every input checked unchanged. ``--scatterx-library NAME`` (repeatable: ``native``,
``torch``, ``jax``, ``array_api_strict``) chooses the columns; a library that is not
installed is skipped, or fails with ``--require-library NAME``. JAX runs with x64 on in
the test process, so that its rows cover int64, float64 and complex128 too.

Test ids name the backend, then the library (none for native), then the case:
``numba-spec-example-1``, ``numba-torch-spec-example-1``, ``numba-gather-onnx-0`` (every
gather case's name begins with ``gather-``, every ND case's with ``scatter-nd-`` or
``gather-nd-``).

Every case runs through every library: the full cross product, no subset. It is cheap:
the library rows reuse the JIT signatures that the native rows compile (one xdist group
per dtype and reduction holds them all), and each call is small. Measured with numba's
cache warm, on 2 shared cores: the conformance file takes 68 s with ``-n 2`` against 14 s
for the native rows alone (the library rows are ~6600 tests on numpy and numba);
``-k torch`` alone takes 15 s on one core. A column that cannot run here (an unavailable
backend, a library not installed) is one test, ``test_missing_column_is_said``, not one
skip per case; so are the cases of an operation a column's backend lacks (only
``scatter_elements`` is required). The gather cases add ~2900 tests on numpy, numba and
dask, ~11 s of CPU in all, most of it Dask's graphs. The 336 ND cases add ~3000 tests on
numpy, numba and dask, ~26 s of CPU on one core (~10 s of it Dask's). The native numba
rows cost 5.5 min cold.

On a JIT backend (:data:`JIT_BACKENDS`) the cost is compiling: each dtype, reduction,
strategy, index dtype and data layout that a case meets may be a signature of its own,
seconds each on a cold cache. There the families that vary strategy and layout
(:data:`COVER_FAMILIES`) run by default for one dtype of each width-and-kind the kernels
fold (:data:`COVER_DTYPES`); their rows of the other dtypes are marked ``slow``
(``python -m pytest -m slow``, which ``.ci/run`` runs), as they compile 14 signatures
more and test the same code. So are the JIT rows with int32 indices of every dtype but
float32 (:data:`INT32_INDEX_DTYPES`): int32 indices are signatures of their own. Every
other family, every dtype x reduction of the generated families, and every row of the
other backends run by default; ``python -m scatterx check`` runs the whole matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scatterx import backends
from scatterx._registry import registered
from scatterx.testing import ConformanceCase, matrix_cases, run_case
from scatterx.testing._libraries import LIBRARIES, NATIVE, device_for, enable_jax_x64, library
from scatterx.testing._runner import OPERATIONS, has_operation
from scatterx.testing.plugin import skip_or_fail, skip_or_fail_library

CASES = matrix_cases()
BACKENDS = [record.name for record in backends()]
COLUMNS = (NATIVE, *LIBRARIES)
#: Backends that compile code for each kind of call.
JIT_BACKENDS = frozenset({"numba"})
#: Families whose JIT rows run by default only for :data:`COVER_DTYPES`.
COVER_FAMILIES = frozenset({"strategy", "layout", "gather-layout"})
#: 0/1 bytes, a signed integer (folded as unsigned where the bits allow), a float.
COVER_DTYPES = frozenset({"bool", "int32", "float32"})
#: The dtype whose JIT rows with int32 indices run by default: int32 indices are a
#: signature of their own for every dtype, and the code reading them does not depend on
#: the values' dtype.
INT32_INDEX_DTYPES = frozenset({"float32"})


def in_default_run(backend: str, case: ConformanceCase) -> bool:
    """Whether ``case`` runs on ``backend`` without ``-m slow`` (see the module's text)."""
    if backend not in JIT_BACKENDS:
        return True
    if _int32_indices(case) and case.dtype_key not in INT32_INDEX_DTYPES:
        return False
    return case.family not in COVER_FAMILIES or case.dtype_key in COVER_DTYPES


def _int32_indices(case: ConformanceCase) -> bool:
    indices = case.indices
    return isinstance(indices, np.ndarray) and indices.dtype == np.int32


def _chosen_libraries(config: pytest.Config) -> list[str]:
    chosen: list[str] = config.getoption("--scatterx-library") or list(COLUMNS)
    unknown = [name for name in chosen if name not in COLUMNS]
    if unknown:
        msg = f"--scatterx-library {unknown[0]!r}: choose from {', '.join(COLUMNS)}"
        raise pytest.UsageError(msg)
    return list(dict.fromkeys(chosen))


def _param(backend: str, library: str, case: ConformanceCase) -> Any:
    """One test, with its xdist group: one dtype and reduction (or gather), so that with
    ``pytest -n N --dist loadgroup`` each compiled signature of a JIT backend is compiled
    by one worker, not by every worker that meets it (the library rows reuse it); marked
    slow outside :func:`in_default_run`."""
    names = [backend] if library == NATIVE else [backend, library]
    marks = [pytest.mark.xdist_group(case.signature)]
    if not in_default_run(backend, case):
        marks.append(pytest.mark.slow)
    return pytest.param(
        backend,
        None if library == NATIVE else library,
        case,
        id="-".join([*names, case.name]),
        marks=marks,
    )


Column = tuple[str, str]  # (backend, library or NATIVE)


def _columns(config: pytest.Config) -> tuple[list[Column], list[tuple[Column, str, str]]]:
    """The (backend, library) columns to run, and those that cannot run here: each with
    why and what is missing (``"backend"`` or ``"library"``; an operation's name, such as
    ``"gather_nd"``, for its cases in a column whose backend lacks it), said by one test
    instead of one skip per case (thousands of skips cost the README's test command
    seconds)."""
    chosen = config.getoption("--scatterx-backend") or BACKENDS
    records = {record.name: record for record in backends()}
    libraries = _chosen_libraries(config)
    runs: list[Column] = []
    missing: list[tuple[Column, str, str]] = []
    for backend in chosen:
        for name in libraries:
            record = records[backend]
            if name != NATIVE and device_for(record.array_types) is None:
                continue  # no library's arrays are carried to this backend's (Dask's)
            why_library = None if name == NATIVE else library(name).available()
            if not record.available:
                missing.append(
                    ((backend, name), f"{backend} is unavailable: {record.reason}", "backend")
                )
            elif why_library is not None:
                missing.append(((backend, name), why_library, "library"))
            else:
                runs.append((backend, name))
                missing.extend(
                    ((backend, name), f"{backend} has no {operation}", operation)
                    for operation in _lacks(backend)
                )
    return runs, missing


def _lacks(backend: str) -> list[str]:
    """The operations of the matrix that the backend named does not compute."""
    return [op for op in OPERATIONS if not has_operation(registered()[backend], op)]


def _missing_id(missing: tuple[Column, str, str]) -> str:
    column, _, what = missing
    return "-".join(column if what in ("backend", "library") else [*column, what])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    config = metafunc.config
    if "conformance_backend" in metafunc.fixturenames:
        runs, _ = _columns(config)
        if any(name == "jax" for _, name in runs):
            # JAX's 64-bit dtypes, for the whole test process, before any JAX array is
            # made: without x64 JAX would turn int64, float64 and complex128 data into
            # 32-bit types (the JAX adapter skips those cases rather than let it).
            enable_jax_x64()
        lacking = {backend: _lacks(backend) for backend, _ in runs}
        params = [
            _param(backend, name, case)
            for backend, name in runs
            for case in CASES
            if case.operation not in lacking[backend]
        ]
        metafunc.parametrize(("conformance_backend", "conformance_library", "case"), params)
    elif "missing_column" in metafunc.fixturenames:
        _, missing = _columns(config)
        metafunc.parametrize("missing_column", missing, ids=[_missing_id(m) for m in missing])


def test_missing_column_is_said(missing_column: tuple[Column, str, str], pytestconfig: Any) -> None:
    """A backend or library missing here: skipped once per column with why, or failed
    where it is required; a backend without an operation other than scatter_elements
    (which the contract lets a backend lack): skipped once per column and operation."""
    (backend, name), reason, what = missing_column
    if what in OPERATIONS:
        count = sum(case.operation == what for case in CASES)
        pytest.skip(f"{reason} ({count} {what} cases)")
    if what == "backend":
        skip_or_fail(pytestconfig, backend, f"{reason} ({len(CASES)} cases)")
    skip_or_fail_library(pytestconfig, name, f"{reason} ({len(CASES)} cases)")


def test_backend_matches_oracle(
    conformance_backend: str,
    conformance_library: str | None,
    case: ConformanceCase,
    pytestconfig: Any,
) -> None:
    outcome = run_case(conformance_backend, case, library=conformance_library)
    if outcome.status == "skipped":
        if outcome.unavailable:
            skip_or_fail(pytestconfig, conformance_backend, outcome.detail)
        if outcome.library_unavailable and conformance_library is not None:
            skip_or_fail_library(pytestconfig, conformance_library, outcome.detail)
        pytest.skip(outcome.detail)
    assert outcome.status == "passed", outcome.detail
