"""mypy must reject a backend that does not match :class:`scatterx.backend.Backend`.

CI runs mypy (strict, so ``warn_unused_ignores``) over this file: the ``type: ignore`` below
is used only while mypy finds the backend wrong. Should the protocol stop catching these
mistakes, mypy reports the ignore as unused and CI fails.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scatterx.backend import Backend, ScatterRequest


class WrongBackend:
    """Three mistakes: ``available`` returns a bool, ``can_run`` wants a second argument,
    and ``priority`` is a string."""

    name = "wrong"
    array_types = ("numpy:ndarray",)
    priority = "first"
    capabilities: Mapping[str, frozenset[str]] = {"float64": frozenset({"none"})}
    version = "1"

    def available(self) -> bool:
        return True

    def can_run(self, request: ScatterRequest, strict: bool) -> str | None:
        return None

    def scatter_elements(
        self, request: ScatterRequest
    ) -> np.ndarray[tuple[int, ...], np.dtype[np.float64]]:
        return np.zeros(request.shape)


backend: Backend = WrongBackend()  # type: ignore[assignment]
