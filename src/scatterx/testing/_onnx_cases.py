"""The ``onnx`` column: conformance cases through a one-node model in onnx's
ReferenceEvaluator with :data:`scatterx.onnx.ops`, and ONNX's own node tests."""

from __future__ import annotations

import importlib.util
import re
import warnings
from functools import cache
from typing import Any

import numpy as np

from scatterx import BackendError, use_backend
from scatterx._registry import registered

from ._compare import first_difference
from ._nd_cases import ConformanceCase
from ._runner import Outcome, _declined, _expected, has_operation

ONNX = "onnx"
"""The name of the matrix's column of one-node ONNX models run by the ReferenceEvaluator."""

OPERATORS = ("ScatterElements", "GatherElements", "Scatter", "ScatterND", "GatherND")
"""The ONNX operators :mod:`scatterx.onnx` serves."""

#: Each operation's node and the opset of its model.
_OP_TYPES = {
    "scatter_elements": ("ScatterElements", 18),
    "gather_elements": ("GatherElements", 13),
    "scatter_nd": ("ScatterND", 18),
    "gather_nd": ("GatherND", 13),
}
#: Attributes left out of the node where they hold their default.
_DEFAULTS = {"axis": 0, "batch_dims": 0}


def onnx_unavailable() -> str | None:
    """Why the onnx column cannot run here, or None."""
    if importlib.util.find_spec("onnx") is None:
        return "onnx is not installed (pip install 'scatterx[onnx]')"
    return None


#: The modules of ``onnx.backend.test.case.node`` that hold the node tests of
#: :data:`OPERATORS`, in the order ``collect_testcases`` imports them.
_NODE_TEST_MODULES = ("gatherelements", "scatter", "scatterelements", "gathernd", "scatternd")


@cache
def onnx_node_tests() -> tuple[Any, ...]:
    """ONNX's own node tests of the operators of :data:`OPERATORS`.

    Importing a module of ``onnx.backend.test.case.node`` runs its examples, which add
    their node tests to the package's list. ``collect_testcases`` imports the module of
    every operator (about 8 s of CPU, in each pytest worker as it collects), filtered or
    not, so only the modules of these operators are imported: the same tests, in the same
    order, in about 1 s. An onnx without that list gets ``collect_testcases``.
    """
    import importlib

    from onnx.backend.test.case import node

    with warnings.catch_warnings():  # other operators' tests overflow casts on purpose
        warnings.simplefilter("ignore", RuntimeWarning)
        if isinstance(getattr(node, "_NodeTestCases", None), list):
            for name in _NODE_TEST_MODULES:
                importlib.import_module(f"{node.__name__}.{name}")
            tests = node._NodeTestCases
        else:
            tests = node.collect_testcases()
    return tuple(t for t in tests if t.model and t.model.graph.node[0].op_type in OPERATORS)


def _element_type(array: Any) -> int:
    """The ONNX element type of a NumPy array's dtype (strings of any kind: STRING)."""
    from onnx import TensorProto, helper

    dtype = np.asarray(array).dtype
    if dtype.kind in "OUST":
        return int(TensorProto.STRING)
    return int(helper.np_dtype_to_tensor_dtype(dtype.newbyteorder("=")))


def _attribute_holds(value: Any) -> bool:
    """Whether an ONNX attribute holds ``value`` as it is (a bool would become an int)."""
    return type(value) in (int, float, str) or isinstance(value, np.integer)


def one_node_model(case: ConformanceCase) -> Any:
    """A model of one ScatterElements or ScatterND (opset 18), GatherElements or GatherND
    (opset 13) node: the case's call, its inputs typed by their arrays' element types and
    of any shape."""
    from onnx import helper

    op_type, opset = _OP_TYPES[case.operation]
    attributes = {
        k: v
        for k, v in case.kwargs().items()
        if not (k in _DEFAULTS and type(v) is int and v == _DEFAULTS[k])
    }
    node = helper.make_node(op_type, list(case.roles), ["output"], name="case", **attributes)
    inputs = [
        helper.make_tensor_value_info(role, _element_type(array), None)
        for role, array in zip(case.roles, case.arrays, strict=True)
    ]
    output = helper.make_tensor_value_info("output", _element_type(case.data), None)
    graph = helper.make_graph([node], "case", inputs, [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _unexpressed(case: ConformanceCase) -> str | None:
    """Why a one-node model cannot make the case's call, or None."""
    if case.numpy_roles:
        return "nothing to mix: the evaluator's tensors are NumPy arrays"
    for name, value in case.kwargs().items():
        if not _attribute_holds(value):
            return f"an ONNX attribute cannot hold {name}={value!r} as it is"
    try:
        for array in case.arrays:
            _element_type(array)
    except (TypeError, KeyError, ValueError) as exc:
        return f"ONNX has no element type for this input: {exc}"
    return None


def _outcome(case: ConformanceCase, run: Any, feeds: dict[str, Any]) -> Outcome:
    """Run the session; the outcome against the case's error or the oracle."""
    try:
        (result,) = run(None, feeds)
    except Exception as exc:
        if case.error is not None and isinstance(exc, case.error):
            if case.match is None or re.search(case.match, str(exc)):
                return Outcome("passed")
            return Outcome("failed", f"message {str(exc)!r} does not match {case.match!r}")
        raise
    if case.error is not None:
        return Outcome("failed", f"returned a result where {case.error.__name__} was due")
    if type(result) is not np.ndarray or result.dtype != np.asarray(case.data).dtype:
        return Outcome("failed", f"returned {type(result).__name__} {result.dtype}")
    expected, free_nans = _expected(case)
    problem = first_difference(result, expected, any_nan=free_nans)
    return Outcome("failed", problem) if problem else Outcome("passed")


def run_onnx_case(backend_name: str, case: ConformanceCase) -> Outcome:
    """Run ``case`` as a one-node model through ``ReferenceEvaluator(model,
    new_ops=list(scatterx.onnx.ops))`` under ``use_backend(backend_name)``; compare with the
    oracle bit for bit, or the error with the case's, and check no input was modified.

    Skipped where onnx is not installed (``library_unavailable``), where the backend is
    unavailable (``unavailable``), declines the call, or the model cannot express it.
    """
    reason = onnx_unavailable()
    if reason is not None:
        return Outcome("skipped", reason, library_unavailable=True)
    backend = registered()[backend_name]
    reason = backend.available()
    if reason is not None:
        return Outcome("skipped", f"{backend_name} is unavailable: {reason}", unavailable=True)
    if not has_operation(backend, case.operation):
        return Outcome("skipped", f"{backend_name} has no {case.operation}")
    why = _unexpressed(case)
    if why is not None:
        return Outcome("skipped", why)
    from onnx.reference import ReferenceEvaluator

    import scatterx.onnx

    session = ReferenceEvaluator(one_node_model(case), new_ops=list(scatterx.onnx.ops))
    feeds = dict(zip(case.roles, case.arrays, strict=True))
    before = [np.array(a, copy=True) for a in case.arrays]
    try:
        with use_backend(backend_name):
            outcome = _outcome(case, session.run, feeds)
    except BackendError as exc:
        return _declined(backend, case, exc)
    except Exception as exc:
        return Outcome("failed", f"raised {exc!r}")
    for role, old, new in zip(case.roles, before, case.arrays, strict=True):
        problem = first_difference(np.asarray(new), old)
        if problem is not None:
            return Outcome("failed", f"{role} was modified: {problem}")
    return outcome
