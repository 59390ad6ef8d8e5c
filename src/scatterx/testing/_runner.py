"""Run one conformance case on one backend (through one array library); shared by the pytest
suite and ``check``."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from scatterx import BackendError, gather_elements, gather_nd, scatter_elements, scatter_nd
from scatterx._registry import registered
from scatterx.backend import Backend, ConvertsArrays

from . import _libraries
from ._compare import first_difference
from ._nd_cases import ConformanceCase
from ._oracle import reference_gather_elements, reference_with_free_nans
from ._oracle_nd import reference_gather_nd, reference_scatter_nd_with_free_nans

_oracle_results: dict[tuple[str, str], tuple[Any, Any]] = {}
#: Each operation's public function, by the name a case's ``operation`` holds.
OPERATIONS: dict[str, Callable[..., Any]] = {
    "scatter_elements": scatter_elements,
    "gather_elements": gather_elements,
    "scatter_nd": scatter_nd,
    "gather_nd": gather_nd,
}


def _no_free_nans(result: Any) -> tuple[Any, Any]:
    """A gather's answer: it computes nothing, so no NaN is free."""
    return result, False


#: Each operation's oracle: the answer of a case's arrays and keywords, and where any NaN
#: may stand for its value.
_ORACLES: dict[str, Callable[..., tuple[Any, Any]]] = {
    "scatter_elements": reference_with_free_nans,
    "gather_elements": lambda *arrays, **kw: _no_free_nans(
        reference_gather_elements(*arrays, **kw)
    ),
    "scatter_nd": reference_scatter_nd_with_free_nans,
    "gather_nd": lambda *arrays, **kw: _no_free_nans(reference_gather_nd(*arrays, **kw)),
}


def has_operation(backend: Backend, operation: str) -> bool:
    """Whether ``backend`` computes ``operation``: every backend the scatter, and each
    other operation only a backend that has its method (contract sections 10 and 14)."""
    return callable(getattr(backend, operation, None))


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
    library_unavailable : bool
        Whether it was skipped because the array library is not installed, or has no
        arrays on the device the backend serves.
    """

    status: str
    detail: str = ""
    unavailable: bool = False
    library_unavailable: bool = False


def expected_result(case: ConformanceCase) -> Any:
    """The oracle's answer for a case that succeeds, computed once per process."""
    return _expected(case)[0]


def _expected(case: ConformanceCase) -> tuple[Any, Any]:
    """The oracle's answer and where any NaN may stand for its value (nowhere, for a
    gather: it computes nothing)."""
    key = (case.operation, case.name)
    if key not in _oracle_results:
        oracle = _ORACLES[case.operation]
        _oracle_results[key] = oracle(*case.arrays, **case.kwargs())
    return _oracle_results[key]


def _made(case: ConformanceCase, make: Callable[[Any], Any]) -> tuple[Any, ...]:
    """The case's arrays made by ``make``, but those of ``numpy_roles``: NumPy arrays."""
    return tuple(
        np.asarray(a) if role in case.numpy_roles else make(np.asarray(a))
        for role, a in zip(case.roles, case.arrays, strict=True)
    )


def _convert(backend: ConvertsArrays, name: str, case: ConformanceCase) -> tuple[Any, ...] | str:
    try:
        return _made(case, backend.from_numpy)
    except (TypeError, ValueError) as exc:
        return f"{name} cannot hold this input: {exc}"


def _nothing_mixed(case: ConformanceCase, arrays: tuple[Any, ...]) -> Outcome | None:
    """Skipped, when a case that mixes NumPy arrays with the run's arrays has nothing to
    mix: the run's arrays are NumPy's too."""
    if case.numpy_roles and all(type(a) is np.ndarray for a in arrays):
        return Outcome("skipped", "nothing to mix: the arrays of this run are NumPy's")
    return None


def _declined(backend: Backend, case: ConformanceCase, exc: BackendError) -> Outcome:
    key = case.dtype_key
    served = None if key is None else backend.capabilities.get(key)
    # A gather has no reduction: a dtype served for any reduction is served for a gather.
    reduction = case.kwargs().get("reduction")
    # "float16 add" for a scatter_elements, as ever; the other operations named.
    named = [] if case.operation == "scatter_elements" else [case.operation]
    what = " ".join([*named, *([] if reduction is None else [str(reduction)])])
    if served and (reduction is None or reduction in served):
        why = f"declined a call its capabilities advertise: {exc}"
        return Outcome("failed", why)
    return Outcome("skipped", f"{backend.name} declines {key} {what}")


def _to_numpy(to_numpy: Callable[[Any], Any], array: Any) -> Any:
    """``array``'s values: the run's ``to_numpy``, but a NumPy array (one the case kept as
    NumPy's while the run's arrays are another library's) is itself."""
    return array if type(array) is np.ndarray else to_numpy(array)


def _unmodified(
    to_numpy: Callable[[Any], Any],
    case: ConformanceCase,
    before: list[Any],
    arrays: tuple[Any, ...],
) -> str | None:
    for role, old, new in zip(case.roles, before, arrays, strict=True):
        problem = first_difference(np.asarray(_to_numpy(to_numpy, new)), old)
        if problem is not None:
            return f"{role} was modified: {problem}"
    return None


def _call(
    backend: Backend,
    case: ConformanceCase,
    arrays: tuple[Any, ...],
    to_numpy: Callable[[Any], Any],
) -> tuple[Any, Outcome | None]:
    operation = OPERATIONS[case.operation]
    try:
        result = operation(*arrays, backend=backend.name, **case.kwargs())
        if case.error is not None:
            # A lazy result (Dask's) raises the errors that need values (index bounds)
            # only when it is computed (contract section 8).
            to_numpy(result)
        return result, None
    except BackendError as exc:
        return None, _declined(backend, case, exc)
    except Exception as exc:
        if case.error is not None and isinstance(exc, case.error):
            if case.match is None or re.search(case.match, str(exc)):
                return None, Outcome("passed")
            return None, Outcome("failed", f"message {str(exc)!r} does not match {case.match!r}")
        return None, Outcome("failed", f"raised {exc!r}")


def _same_type(result: Any, like: Any) -> str | None:
    if type(result) is not type(like):
        return f"returned {type(result).__name__}, not {type(like).__name__}"
    return None


def _check_result(
    to_numpy: Callable[[Any], Any],
    check: Callable[[Any, Any], str | None],
    case: ConformanceCase,
    arrays: tuple[Any, ...],
    result: Any,
) -> Outcome:
    if case.error is not None:
        return Outcome("failed", f"returned a result where {case.error.__name__} was due")
    problem = check(result, arrays[0])
    if problem is not None:
        return Outcome("failed", problem)
    actual = np.asarray(to_numpy(result))
    expected, free_nans = _expected(case)
    problem = first_difference(actual, expected, any_nan=free_nans)
    return Outcome("failed", problem) if problem else Outcome("passed")


def _library_arrays(
    backend: Backend, case: ConformanceCase, adapter: _libraries.Library
) -> tuple[Any, ...] | Outcome:
    """The case's arrays as the library's arrays on the device the backend serves, or why
    the case cannot run through that library here."""
    name = adapter.name
    device = _libraries.device_for(tuple(backend.array_types))
    if device is None:
        served = ", ".join(backend.array_types) or "nothing"
        why = f"{backend.name} serves {served}: no device for {name} arrays"
        return Outcome("skipped", why)
    if device not in adapter.devices:  # never there, by design: not a missing install
        return Outcome("skipped", f"{name} has no arrays on {device} ({backend.name}'s device)")
    reason = adapter.available(device)
    if reason is not None:
        return Outcome("skipped", f"{name} is unavailable: {reason}", library_unavailable=True)
    try:
        return _made(case, lambda array: adapter.from_numpy(array, device))
    except (TypeError, ValueError) as exc:
        why = str(exc) if str(exc).startswith(name) else f"{name} cannot hold this input: {exc}"
        return Outcome("skipped", why)


class _Run(NamedTuple):
    """The arrays of one run, how to read them back, and how to check a result's type."""

    arrays: tuple[Any, ...]
    to_numpy: Callable[[Any], Any]
    check: Callable[[Any, Any], str | None]


def _run_arrays(
    backend: Backend, case: ConformanceCase, adapter: _libraries.Library | None
) -> _Run | Outcome:
    """The case's arrays for this run, how to read them back and how to check the result's
    type; or why the case cannot run so."""
    if not has_operation(backend, case.operation):
        return Outcome("skipped", f"{backend.name} has no {case.operation}")
    if adapter is not None:
        made = _library_arrays(backend, case, adapter)
        if isinstance(made, Outcome):
            return made
        return _Run(made, adapter.to_numpy, adapter.check_result)
    if not isinstance(backend, ConvertsArrays):
        return Outcome("skipped", f"backend {backend.name} has no from_numpy() for test data")
    own = _convert(backend, backend.name, case)
    if isinstance(own, str):
        return Outcome("skipped", own)
    return _Run(own, backend.to_numpy, _same_type)


def run_case(backend_name: str, case: ConformanceCase, library: str | None = None) -> Outcome:
    """Run ``case`` on the backend named; compare with the oracle bit for bit.

    Also checks that no input was modified and that the result is a new array of the
    arrays' own type: the backend's (made by its ``from_numpy``) or, with ``library``, that
    library's, on the device of ``data`` and with its dtype.

    Parameters
    ----------
    backend_name : str
        A registered backend.
    case : Case, GatherCase, ScatterNDCase or GatherNDCase
        The case: a call of ``scatter_elements``, ``gather_elements``, ``scatter_nd`` or
        ``gather_nd``.
    library : str, optional
        An array library of ``scatterx.testing.LIBRARIES`` (``"torch"``, ``"jax"``,
        ``"array_api_strict"``): the case's arrays are made in it, on the device the
        backend serves (the CPU for a backend of NumPy arrays, a CUDA device for one of
        CuPy arrays), and scatterx carries them to the backend. None (the default): the
        backend's own arrays, from its ``from_numpy``.

    Returns
    -------
    Outcome
        Passed, failed or skipped, with why. Skipped, with ``unavailable`` set, when the
        backend is unavailable; with ``library_unavailable`` set when the library is not
        installed or lacks the backend's device here (torch without CUDA); skipped too
        when the backend lacks the case's operation (``gather_elements``, ``scatter_nd``,
        ``gather_nd``), when the backend or the
        library cannot hold the case's arrays, when the library never has arrays on the
        backend's device (array-api-strict on a GPU), or when a case that mixes NumPy
        arrays with the run's finds NumPy arrays there.

    Raises
    ------
    ValueError
        For a ``library`` that is not one of ``scatterx.testing.LIBRARIES``.
    """
    backend = registered()[backend_name]
    adapter = None if library is None else _libraries.library(library)  # unknown: ValueError
    reason = backend.available()
    if reason is not None:
        return Outcome("skipped", f"{backend_name} is unavailable: {reason}", unavailable=True)
    run = _run_arrays(backend, case, adapter)
    if isinstance(run, Outcome):
        return run
    arrays, to_numpy, check = run
    unmixed = _nothing_mixed(case, arrays)
    if unmixed is not None:
        return unmixed
    before = [np.array(_to_numpy(to_numpy, a), copy=True) for a in arrays]
    result, outcome = _call(backend, case, arrays, to_numpy)
    if outcome is None:
        outcome = _check_result(to_numpy, check, case, arrays, result)
    if outcome.status != "skipped":
        modified = _unmodified(to_numpy, case, before, arrays)
        if modified is not None:
            return Outcome("failed", modified)
    return outcome
