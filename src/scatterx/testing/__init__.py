"""The conformance suite: the loop oracle, the cases, and a runner for any backend."""

from scatterx._registry import scoped_registry

from ._cases import Case, error_cases, onnx_node_cases, spec_cases
from ._compare import assert_bitwise_equal, first_difference
from ._edge_cases import edge_cases
from ._generated import grid_cases, layout_cases, special_cases, strategy_cases
from ._libraries import LIBRARIES
from ._oracle import reference_scatter_elements, reference_with_free_nans
from ._runner import Outcome, expected_result, run_case

__all__ = [
    "LIBRARIES",
    "Case",
    "Outcome",
    "all_cases",
    "assert_bitwise_equal",
    "edge_cases",
    "error_cases",
    "expected_result",
    "first_difference",
    "grid_cases",
    "layout_cases",
    "onnx_node_cases",
    "reference_scatter_elements",
    "reference_with_free_nans",
    "run_case",
    "scoped_registry",
    "spec_cases",
    "special_cases",
    "strategy_cases",
]


def all_cases() -> list[Case]:
    """Every conformance case, in a fixed order.

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
