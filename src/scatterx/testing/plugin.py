"""pytest plugin of scatterx: the conformance suite's options.

``--require-backend NAME`` and ``--require-library NAME`` turn the skips of an unavailable
backend or array library into failures; ``--scatterx-backend NAME`` and
``--scatterx-library NAME`` choose the matrix's backends and array libraries.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("scatterx")
    group.addoption(
        "--require-backend",
        action="append",
        default=[],
        metavar="NAME",
        help="fail, instead of skipping, the conformance tests of backend NAME when it is "
        "unavailable (repeatable)",
    )
    group.addoption(
        "--scatterx-backend",
        action="append",
        default=[],
        metavar="NAME",
        help="run the conformance suite on backend NAME only (repeatable; default: all)",
    )
    group.addoption(
        "--require-library",
        action="append",
        default=[],
        metavar="NAME",
        help="fail, instead of skipping, the conformance tests through array library NAME "
        "(torch, jax, array_api_strict) when it is not installed or lacks the device "
        "(repeatable)",
    )
    group.addoption(
        "--scatterx-library",
        action="append",
        default=[],
        metavar="NAME",
        help="run the conformance suite through array library NAME only: native (each "
        "backend's own arrays), torch, jax or array_api_strict (repeatable; default: all)",
    )


def pytest_configure(config: pytest.Config) -> None:
    # The conformance cases carry pytest-xdist's group mark, known without xdist too.
    config.addinivalue_line("markers", "xdist_group(name): run in one pytest-xdist worker")


def skip_or_fail(config: pytest.Config, backend: str, reason: str) -> None:
    """Skip with ``reason``, or fail when ``backend`` was required on the command line."""
    if backend in config.getoption("--require-backend"):
        pytest.fail(f"required backend {backend!r} is unavailable: {reason}")
    pytest.skip(reason)


def skip_or_fail_library(config: pytest.Config, library: str, reason: str) -> None:
    """Skip with ``reason``, or fail when array ``library`` was required on the command line."""
    if library in config.getoption("--require-library"):
        pytest.fail(f"required array library {library!r} is unavailable: {reason}")
    pytest.skip(reason)
