"""The numba code: every compiled function; ``_runtime`` imports these modules on first use."""
