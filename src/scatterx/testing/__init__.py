"""The conformance suite: the loop oracles, the cases, and a runner for any backend."""

from scatterx._registry import scoped_registry

from ._cases import Case, error_cases, onnx_node_cases, spec_cases
from ._compare import assert_bitwise_equal, first_difference
from ._edge_cases import edge_cases
from ._gather_cases import GatherCase, gather_error_cases, gather_onnx_node_cases
from ._gather_generated import (
    gather_edge_cases,
    gather_grid_cases,
    gather_layout_cases,
    gather_special_cases,
    gather_strategy_cases,
)
from ._generated import grid_cases, layout_cases, special_cases, strategy_cases
from ._libraries import LIBRARIES
from ._nd_cases import (
    ConformanceCase,
    GatherNDCase,
    ScatterNDCase,
    gather_nd_error_cases,
    scatter_nd_error_cases,
)
from ._nd_generated import (
    gather_nd_grid_cases,
    nd_edge_cases,
    scatter_nd_grid_cases,
    scatter_nd_special_cases,
)
from ._oracle import reference_gather_elements, reference_scatter_elements, reference_with_free_nans
from ._oracle_nd import reference_gather_nd, reference_scatter_nd
from ._runner import Outcome, expected_result, run_case

__all__ = [
    "LIBRARIES",
    "Case",
    "ConformanceCase",
    "GatherCase",
    "GatherNDCase",
    "Outcome",
    "ScatterNDCase",
    "all_cases",
    "assert_bitwise_equal",
    "edge_cases",
    "error_cases",
    "expected_result",
    "first_difference",
    "gather_cases",
    "gather_edge_cases",
    "gather_error_cases",
    "gather_grid_cases",
    "gather_layout_cases",
    "gather_onnx_node_cases",
    "gather_special_cases",
    "gather_strategy_cases",
    "grid_cases",
    "layout_cases",
    "matrix_cases",
    "nd_cases",
    "onnx_node_cases",
    "reference_gather_elements",
    "reference_gather_nd",
    "reference_scatter_elements",
    "reference_scatter_nd",
    "reference_with_free_nans",
    "run_case",
    "scoped_registry",
    "spec_cases",
    "special_cases",
    "strategy_cases",
]


def all_cases() -> list[Case]:
    """Every conformance case of ``scatter_elements``, in a fixed order.

    Returns
    -------
    list of Case
        The spec's examples, ONNX's node tests, and every generated family.
    """
    return [
        *spec_cases(),
        *onnx_node_cases(),
        *grid_cases(),
        *special_cases(),
        *strategy_cases(),
        *layout_cases(),
        *edge_cases(),
        *error_cases(),
    ]


def gather_cases() -> list[GatherCase]:
    """Every conformance case of ``gather_elements``, in a fixed order.

    Returns
    -------
    list of GatherCase
        ONNX's node tests, and every generated family.

    Examples
    --------
    >>> from scatterx.testing import gather_cases, run_case
    >>> case = gather_cases()[0]
    >>> case.name, case.kwargs(), run_case("numpy", case).status
    ('gather-onnx-0', {'axis': 1}, 'passed')
    """
    return [
        *gather_onnx_node_cases(),
        *gather_grid_cases(),
        *gather_special_cases(),
        *gather_strategy_cases(),
        *gather_layout_cases(),
        *gather_edge_cases(),
        *gather_error_cases(),
    ]


def nd_cases() -> list[ScatterNDCase | GatherNDCase]:
    """Every conformance case of ``scatter_nd`` and ``gather_nd``, in a fixed order.

    Returns
    -------
    list of ScatterNDCase or GatherNDCase
        The generated families (ranks 1 to 4, every depth, batch_dims 0 to 2, every dtype
        and reduction), the edges the edges and the errors.

    Examples
    --------
    >>> from scatterx.testing import nd_cases, run_case
    >>> case = nd_cases()[0]
    >>> case.name, case.indices.shape, run_case("numpy", case).status
    ('scatter-nd-bool-none-6-k1', (5, 1), 'passed')
    """
    cases = [
        *scatter_nd_grid_cases(),
        *scatter_nd_special_cases(),
        *gather_nd_grid_cases(),
        *nd_edge_cases(),
        *scatter_nd_error_cases(),
        *gather_nd_error_cases(),
    ]
    # The scatter's first, each operation's families in the order above.
    return sorted(cases, key=lambda case: case.operation != "scatter_nd")


def matrix_cases() -> list[ConformanceCase]:
    """Every case the conformance matrix and ``python -m scatterx check`` run.

    Returns
    -------
    list of Case, GatherCase, ScatterNDCase or GatherNDCase
        :func:`all_cases` (the scatter's), :func:`gather_cases`, then :func:`nd_cases`.

    Examples
    --------
    >>> from scatterx.testing import matrix_cases
    >>> list(dict.fromkeys(case.operation for case in matrix_cases()))
    ['scatter_elements', 'gather_elements', 'scatter_nd', 'gather_nd']
    """
    return [*all_cases(), *gather_cases(), *nd_cases()]
