"""Every registered backend against the oracle on every conformance case."""

from scatterx.testing.conformance import pytest_generate_tests, test_backend_matches_oracle

__all__ = ["pytest_generate_tests", "test_backend_matches_oracle"]
