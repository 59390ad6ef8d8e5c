"""Backends for tests: one that records what it runs, one that is never available, one
that answers wrong."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

import scatterx
from scatterx.backend import GatherRequest, Request, ScatterRequest

#: What a WrongBackend makes of the numpy backend's answer to a request.
Result = Callable[[Any, Request], Any]


class Recorder:
    """Runs the numpy backend, keeping each request it was handed and each result it made
    (gathers too)."""

    name = "recorder"
    array_types = ("numpy:ndarray",)
    priority = -1
    version = "test"

    def __init__(self) -> None:
        from scatterx_numpy import backend

        self.inner = backend
        self.capabilities = backend.capabilities
        self.requests: list[ScatterRequest | GatherRequest] = []
        self.results: list[np.ndarray[Any, Any]] = []

    def available(self) -> str | None:
        return None

    def can_run(self, request: ScatterRequest | GatherRequest) -> str | None:
        return None

    def scatter_elements(self, request: ScatterRequest) -> Any:
        self.requests.append(request)
        self.results.append(self.inner.scatter_elements(request))
        return self.results[-1]

    def gather_elements(self, request: GatherRequest) -> Any:
        self.requests.append(request)
        self.results.append(self.inner.gather_elements(request))
        return self.results[-1]


class UnavailableBackend:
    """Registered, never available: what a missing backend looks like."""

    name = "never"
    array_types = ("numpy:ndarray",)
    priority = 1000
    capabilities: Mapping[str, frozenset[str]] = {"float32": frozenset({"none"})}
    version = "0"

    def available(self) -> str | None:
        return "it never is"

    def can_run(self, request: ScatterRequest) -> str | None:
        return None

    def scatter_elements(self, request: ScatterRequest) -> Any:
        raise AssertionError


class WrongBackend:
    """float32 ``none`` only: the numpy backend's answer, then ``wrong(answer, request)``."""

    priority = 1000
    capabilities: Mapping[str, frozenset[str]] = {"float32": frozenset({"none"})}
    version = "0"

    def __init__(
        self,
        name: str,
        wrong: Result,
        array_types: tuple[str, ...] = ("numpy:ndarray",),
    ) -> None:
        self.name = name
        self.wrong = wrong
        self.array_types = array_types

    def available(self) -> str | None:
        return None

    def can_run(self, request: ScatterRequest) -> str | None:
        ok = request.dtype_key == "float32" and request.reduction == "none"
        return None if ok else "float32 none only"

    def scatter_elements(self, request: ScatterRequest) -> Any:
        arrays = (np.asarray(a) for a in request[:3])
        answer = scatterx.scatter_elements(*arrays, axis=request.axis, backend="numpy")
        return self.wrong(answer, request)

    def from_numpy(self, array: Any) -> Any:
        return array

    def to_numpy(self, array: Any) -> Any:
        return array
