"""Time and memory of one call: every implementation x reduction x standard case x size.

:class:`Scatter` times calls that return a new array, :class:`ScatterInPlace` calls that
update data in place (``out=data`` and the peers' in-place calls; ``scatterx_bench.cases``
says what each contestant does there).
"""

from __future__ import annotations

from typing import Any

from scatterx_bench.base import FLOOR
from scatterx_bench.cases import (
    BACKENDS,
    CASE_NAMES,
    CPU_PEERS,
    REDUCTIONS,
    SIZES,
    make_call,
    make_case,
)

IMPLEMENTATIONS = (*BACKENDS, *CPU_PEERS, FLOOR)


class Scatter:
    """The standard cases on the scatterx backends and on the peers, side by side.

    Select the quick variant with ``--bench "'small'"`` and the full one with
    ``--bench "'full'"``.
    """

    params = (list(IMPLEMENTATIONS), list(REDUCTIONS), list(CASE_NAMES), list(SIZES))
    param_names = ("impl", "reduction", "case", "size")
    # Building a full-size case and warming its implementation up takes seconds.
    timeout = 300

    def setup(self, impl: str, reduction: str, case: str, size: str) -> None:
        self.run = make_call(impl, make_case(case, SIZES[size]), reduction)

    def time_scatter_elements(self, impl: str, reduction: str, case: str, size: str) -> None:
        self.run()


class ScatterInPlace(Scatter):
    """:class:`Scatter` updating data in place: every sample's calls update the same array.

    scatterx's backends take ``out=data``, torch ``Tensor.scatter_`` / ``scatter_reduce_``,
    ``numpy-peer`` ``put_along_axis`` / ``ufunc.at`` on data itself; ``onnxruntime`` runs
    its usual call (it cannot write into an input; its arena reuses the output's buffers),
    ``copy-floor`` copies indices and updates only. The reductions of the command's table
    only, which keeps the quick run of CI short (``python asv_bench/bench.py --mode in-place
    --reduction mul`` times the others).
    """

    params = (list(IMPLEMENTATIONS), ["none", "add", "max"], list(CASE_NAMES), list(SIZES))

    # Scatter's setup stays as it was: a changed one would start its asv history anew.
    def setup(self, impl: str, reduction: str, case: str, size: str) -> None:
        self.run = make_call(impl, make_case(case, SIZES[size]), reduction, "in-place")


class PeakMemory:
    """Peak resident memory of one call per CPU backend, inputs included.

    Compare each backend with ``copy-floor``, which holds the inputs and one copy of
    each. GPU memory is not resident memory: :class:`DeviceMemory` measures the cupy backend.
    """

    params = (["numpy", "numba", FLOOR], list(SIZES))
    param_names = ("impl", "size")
    timeout = 300

    def setup(self, impl: str, size: str) -> None:
        self.run = make_call(impl, make_case("square-random", SIZES[size]), "add")

    def peakmem_square_random_add(self, impl: str, size: str) -> None:
        self.run()


class DeviceMemory:
    """Device memory one cupy-backend call takes from cupy's pool, above its inputs."""

    params = (list(SIZES),)
    param_names = ("size",)
    unit = "bytes"
    timeout = 300

    def setup(self, size: str) -> None:
        self.run = make_call("cupy", make_case("square-random", SIZES[size]), "add")

    def track_pool_growth_square_random_add(self, size: str) -> Any:
        import cupy

        pool = cupy.get_default_memory_pool()
        pool.free_all_blocks()
        before = pool.total_bytes()
        out = self.run()
        # Freed temporaries stay in the pool, so its growth is the call's peak need.
        grown = pool.total_bytes() - before
        del out
        return grown
