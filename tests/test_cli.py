"""The command line: backends, check (and its exit status on a wrong backend)."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

import scatterx
from scatterx._cli import run_check


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scatterx", *args], capture_output=True, text=True, check=False
    )


def test_backends_lists_numpy_with_its_status() -> None:
    result = _run("backends")
    assert result.returncode == 0
    numpy_row = next(line for line in result.stdout.splitlines() if line.startswith("numpy "))
    assert "numpy:ndarray" in numpy_row
    assert "available" in numpy_row


def test_check_passes_on_numpy_and_prints_the_family_table() -> None:
    result = _run("check", "--backend", "numpy")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "onnx-node    7/0/0" in result.stdout
    assert result.stdout.rstrip().endswith("OK: 0 failure(s)")


class OffByOneBackend:
    """Adds one to every result: the check must catch it."""

    name = "off-by-one"
    array_types = ("numpy:ndarray",)
    priority = 1000
    capabilities: Mapping[str, frozenset[str]] = {"float32": frozenset({"none"})}
    version = "0"

    def available(self) -> str | None:
        return None

    def can_run(self, request: scatterx.ScatterRequest) -> str | None:
        ok = request.dtype_key == "float32" and request.reduction == "none"
        return None if ok else "float32 none only"

    def scatter_elements(self, request: scatterx.ScatterRequest) -> Any:
        out = scatterx.scatter_elements(
            request.data, request.indices, request.updates, axis=request.axis, backend="numpy"
        )
        return out + np.float32(1)

    def from_numpy(self, array: Any) -> Any:
        return array

    def to_numpy(self, array: Any) -> Any:
        return array


def test_check_fails_a_wrong_backend(clean_selection: None) -> None:
    scatterx.register_backend(OffByOneBackend())
    out = io.StringIO()
    assert run_check(["off-by-one"], out=out) == 1
    text = out.getvalue()
    assert "FAILED off-by-one spec-example-1" in text
    assert "FAILED: " in text.splitlines()[-1]
