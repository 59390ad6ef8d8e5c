"""Run one conformance case on one backend; shared by the pytest suite and `check`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from scatterx import BackendError, scatter_elements
from scatterx._registry import registered
from scatterx.backend import Backend, ConvertsArrays

from ._cases import Case
from ._compare import first_difference
from ._oracle import reference_with_free_nans

_oracle_results: dict[str, tuple[Any, Any]] = {}


@dataclass(frozen=True)
class Outcome:
    """What one conformance case gave on one backend.

    Attributes
    ----------
    status : str
        ``"passed"``, ``"failed"`` or ``"skipped"``.
    detail : str
        Why it failed or was skipped.
    unavailable : bool
        Whether it was skipped because the backend is unavailable.
    """

    status: str
    detail: str = ""
    unavailable: bool = False


def expected_result(case: Case) -> Any:
    """The oracle's answer for a case that succeeds, computed once per process."""
    return _expected(case)[0]


def _expected(case: Case) -> tuple[Any, Any]:
    """The oracle's answer and where any NaN may stand for its value."""
    if case.name not in _oracle_results:
        _oracle_results[case.name] = reference_with_free_nans(
            case.data, case.indices, case.updates, axis=case.axis, reduction=case.reduction
        )
    return _oracle_results[case.name]


def _convert(backend: ConvertsArrays, name: str, case: Case) -> tuple[Any, ...] | str:
    try:
        return tuple(
            backend.from_numpy(np.asarray(a)) for a in (case.data, case.indices, case.updates)
        )
    except (TypeError, ValueError) as exc:
        return f"{name} cannot hold this input: {exc}"


def _declined(backend: Backend, case: Case, exc: BackendError) -> Outcome:
    key = case.dtype_key
    advertised = key is not None and case.reduction in backend.capabilities.get(key, ())
    if advertised:
        why = f"declined a call its capabilities advertise: {exc}"
        return Outcome("failed", why)
    return Outcome("skipped", f"{backend.name} declines {case.dtype_key} {case.reduction}")


def _unmodified(backend: ConvertsArrays, before: list[Any], arrays: tuple[Any, ...]) -> str | None:
    for role, old, new in zip(("data", "indices", "updates"), before, arrays, strict=True):
        problem = first_difference(np.asarray(backend.to_numpy(new)), old)
        if problem is not None:
            return f"{role} was modified: {problem}"
    return None


def _call(backend: Backend, case: Case, arrays: tuple[Any, ...]) -> tuple[Any, Outcome | None]:
    try:
        return scatter_elements(*arrays, backend=backend.name, **case.kwargs()), None
    except BackendError as exc:
        return None, _declined(backend, case, exc)
    except Exception as exc:
        if case.error is not None and isinstance(exc, case.error):
            if case.match is None or re.search(case.match, str(exc)):
                return None, Outcome("passed")
            return None, Outcome("failed", f"message {str(exc)!r} does not match {case.match!r}")
        return None, Outcome("failed", f"raised {exc!r}")


def _check_result(
    backend: ConvertsArrays, case: Case, arrays: tuple[Any, ...], result: Any
) -> Outcome:
    if case.error is not None:
        return Outcome("failed", f"returned a result where {case.error.__name__} was due")
    if type(result) is not type(arrays[0]):
        why = f"returned {type(result).__name__}, not {type(arrays[0]).__name__}"
        return Outcome("failed", why)
    actual = np.asarray(backend.to_numpy(result))
    expected, free_nans = _expected(case)
    problem = first_difference(actual, expected, any_nan=free_nans)
    return Outcome("failed", problem) if problem else Outcome("passed")


def run_case(backend_name: str, case: Case) -> Outcome:
    """Run ``case`` on the backend named; compare with the oracle bit for bit.

    Also checks that no input was modified and that the result is a new array of the
    backend's own type.

    Parameters
    ----------
    backend_name : str
        A registered backend.
    case : Case
        The case.

    Returns
    -------
    Outcome
        Passed, failed or skipped, with why.
    """
    backend = registered()[backend_name]
    reason = backend.available()
    if reason is not None:
        return Outcome("skipped", f"{backend_name} is unavailable: {reason}", unavailable=True)
    if not isinstance(backend, ConvertsArrays):
        return Outcome("skipped", f"backend {backend_name} has no from_numpy() for test data")
    arrays = _convert(backend, backend_name, case)
    if isinstance(arrays, str):
        return Outcome("skipped", arrays)
    before = [np.array(backend.to_numpy(a), copy=True) for a in arrays]
    result, outcome = _call(backend, case, arrays)
    if outcome is None:
        outcome = _check_result(backend, case, arrays, result)
    if outcome.status != "skipped":
        modified = _unmodified(backend, before, arrays)
        if modified is not None:
            return Outcome("failed", modified)
    return outcome
