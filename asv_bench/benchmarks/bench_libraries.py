"""scatterx on torch CPU tensors and JAX CPU arrays: the same call on NumPy arrays, the peers.

The suites of ``python asv_bench/bench.py --library torch|jax`` (performance.md: within 1.1x
of the call on NumPy arrays, at most 5 microseconds more on the 3x3 call). A library that
is not installed is skipped.
"""

from __future__ import annotations

from typing import Any

from scatterx_bench.cases import CASE_NAMES, SIZES, make_case, spec_example
from scatterx_bench.libraries import peer_call, require_library, scatterx_call, to_library

LIBRARIES = ["torch", "jax"]
REDUCTIONS = ["none", "add", "max"]
# The cost of carrying the arrays does not hang on the reduction: two keep the suite short.
CARRIED = ["none", "add"]


def _library(library: str) -> None:
    """Skip unless ``library`` is installed; JAX keeps int64 indices (one process per run)."""
    require_library(library)
    if library == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]


class LibraryCall:
    """One backend's call on the library's arrays and on NumPy's: their ratio is the cost."""

    params = (LIBRARIES, ["numpy", "numba"], CARRIED, list(CASE_NAMES), list(SIZES))
    param_names = ("library", "backend", "reduction", "case", "size")
    timeout = 300

    def setup(self, library: str, backend: str, reduction: str, case: str, size: str) -> None:
        _library(library)
        on_numpy = make_case(case, SIZES[size])
        self.on_numpy = scatterx_call(backend, on_numpy, reduction)
        self.on_library = scatterx_call(backend, to_library(on_numpy, library), reduction)

    def time_on_library(self, *params: str) -> Any:
        return self.on_library()

    def time_on_numpy(self, *params: str) -> Any:
        return self.on_numpy()


class LibraryPeer:
    """The library's own scatter: ``torch.scatter(_reduce)``, ``.at[]`` under ``jax.jit``."""

    params = (LIBRARIES, REDUCTIONS, list(CASE_NAMES), list(SIZES))
    param_names = ("library", "reduction", "case", "size")
    timeout = 300

    def setup(self, library: str, reduction: str, case: str, size: str) -> None:
        _library(library)
        moved = to_library(make_case(case, SIZES[size]), library)
        self.peer = peer_call(library, moved, reduction)

    def time_peer(self, *params: str) -> Any:
        return self.peer()


class LibrarySmallCall:
    """The 3x3 spec example through ``scatter_elements`` (automatic choice) on both arrays."""

    params = (LIBRARIES,)
    param_names = ("library",)

    def setup(self, library: str) -> None:
        _library(library)
        on_numpy = spec_example()
        self.numpy_arrays = on_numpy.arrays
        self.library_arrays = to_library(on_numpy, library).arrays
        self.peer = peer_call(library, to_library(on_numpy, library), "none")
        self.time_on_library(library)  # fills the caches every later call uses

    def time_on_library(self, library: str) -> Any:
        import scatterx

        out = scatterx.scatter_elements(*self.library_arrays, axis=0)
        wait = getattr(out, "block_until_ready", None)
        return out if wait is None else wait()

    def time_on_numpy(self, library: str) -> Any:
        import scatterx

        return scatterx.scatter_elements(*self.numpy_arrays, axis=0)

    def time_peer(self, library: str) -> Any:
        return self.peer()
