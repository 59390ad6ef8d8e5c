"""ScatterND and GatherND (issue 45): scatterx's backends, onnxruntime and torch's row calls.

The cases are :data:`scatterx_bench.nd.ND_CASES`: the embedding gradient's row scatter-add
of onnxruntime's issue 28584, the row gather of its forward, and a 4x4x4 call for the fixed
cost. :class:`ScatterND` and :class:`GatherND` return new arrays, their ``InPlace``
subclasses write into arrays of their own (``out=``; onnxruntime runs its usual call).
``python asv_bench/bench.py --nd`` times the same contestants interleaved, with each
result's distance from the exact one.
"""

from __future__ import annotations

from scatterx_bench.base import MODES, Mode
from scatterx_bench.cases import ND_BACKENDS, ND_PEERS, SIZES, make_call, make_case
from scatterx_bench.nd import ND_REDUCTIONS, SIZED_GATHER_ND, SIZED_SCATTER_ND

ND_IMPLEMENTATIONS = (*ND_BACKENDS, *ND_PEERS)


class ScatterND:
    """scatter_nd of each ND scatter case: ``--bench "ScatterND.*'small'"`` the quick one."""

    params = (list(ND_IMPLEMENTATIONS), list(ND_REDUCTIONS), list(SIZED_SCATTER_ND), list(SIZES))
    param_names = ("impl", "reduction", "case", "size")
    # Building the full case and warming its contestant up takes seconds.
    timeout = 300

    def setup(self, impl: str, reduction: str, case: str, size: str) -> None:
        self.run = make_call(impl, make_case(case, SIZES[size]), reduction)

    def time_scatter_nd(self, impl: str, reduction: str, case: str, size: str) -> None:
        self.run()


class ScatterNDInPlace(ScatterND):
    """:class:`ScatterND` in place: ``out=data``, ``Tensor.index_add_`` / ``index_copy_``,
    every sample's calls updating the same data."""

    def setup(self, impl: str, reduction: str, case: str, size: str) -> None:
        self.run = make_call(impl, make_case(case, SIZES[size]), reduction, "in-place")


class GatherND:
    """gather_nd of each ND gather case; torch indexes ``data[rows]``."""

    params = (list(ND_IMPLEMENTATIONS), list(SIZED_GATHER_ND), list(SIZES))
    param_names = ("impl", "case", "size")
    timeout = 300

    def setup(self, impl: str, case: str, size: str) -> None:
        self.run = make_call(impl, make_case(case, SIZES[size]), "none")

    def time_gather_nd(self, impl: str, case: str, size: str) -> None:
        self.run()


class GatherNDInPlace(GatherND):
    """:class:`GatherND` into a result of each contestant's own (``out=``;
    ``torch.index_select(..., out=)``)."""

    def setup(self, impl: str, case: str, size: str) -> None:
        self.run = make_call(impl, make_case(case, SIZES[size]), "none", "in-place")


class SmallND:
    """A 4x4x4 scatter_nd add of two rows: the fixed cost of a call, in each mode."""

    params = (list(ND_IMPLEMENTATIONS), list(MODES))
    param_names = ("impl", "mode")

    def setup(self, impl: str, mode: Mode) -> None:
        self.run = make_call(impl, make_case("small-nd"), "add", mode)

    def time_scatter_nd(self, impl: str, mode: Mode) -> None:
        self.run()
