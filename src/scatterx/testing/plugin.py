"""pytest plugin of scatterx: ``--require-backend NAME`` turns a backend's skip into a failure."""

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


def pytest_configure(config: pytest.Config) -> None:
    # The conformance cases carry pytest-xdist's group mark, known without xdist too.
    config.addinivalue_line("markers", "xdist_group(name): run in one pytest-xdist worker")


def skip_or_fail(config: pytest.Config, backend: str, reason: str) -> None:
    """Skip with ``reason``, or fail when ``backend`` was required on the command line."""
    if backend in config.getoption("--require-backend"):
        pytest.fail(f"required backend {backend!r} is unavailable: {reason}")
    pytest.skip(reason)
