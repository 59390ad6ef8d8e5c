"""Discovery through entry points, backend records, and the light import."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

import pytest

import scatterx
from _backends import UnavailableBackend
from _subprocess import run_python
from scatterx.testing import scoped_registry


def test_import_and_discovery_load_no_heavy_library() -> None:
    # Importing scatterx and every backend's entry point (the registry) must stay light;
    # only asking a backend whether it is available may import its library.
    heavy = ["numba", "cupy", "onnx", "onnxruntime", "torch"]
    code = (
        "import sys, scatterx, scatterx._registry as r; r.registered(); "
        f"print(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    assert run_python(code).strip() == ""


def test_numpy_backend_is_registered_through_its_entry_point() -> None:
    records = {r.name: r for r in scatterx.backends()}
    numpy = records["numpy"]
    assert numpy.available
    assert numpy.reason is None
    assert numpy.array_types == ("numpy:ndarray",)
    assert set(numpy.dtypes) == set(scatterx.DTYPE_KEYS)
    assert numpy.reductions == scatterx.REDUCTIONS
    assert numpy.version


class _EntryPoint:
    def __init__(self, name: str, value: str, loader: Any) -> None:
        self.name, self.value, self._loader = name, value, loader

    def load(self) -> Any:
        return self._loader()


def _broken() -> Any:
    msg = "No module named 'somebody_elses_gpu_lib'"
    raise ImportError(msg)


def test_a_broken_entry_point_is_listed_unavailable() -> None:

    def fake_entry_points() -> list[Any]:
        return [
            *entry_points(group="scatterx.backends"),
            _EntryPoint("broken", "thirdparty:backend", _broken),
        ]

    with scoped_registry(entry_points=fake_entry_points):
        records = {r.name: r for r in scatterx.backends()}
    assert not records["broken"].available
    assert "somebody_elses_gpu_lib" in (records["broken"].reason or "")
    assert records["numpy"].available


def test_an_entry_point_that_is_not_a_backend_is_listed_unavailable() -> None:
    with scoped_registry(entry_points=lambda: [_EntryPoint("odd", "mod:obj", lambda: 42)]):
        (record,) = scatterx.backends()
    assert not record.available
    assert "is not a Backend" in (record.reason or "")


def test_register_backend_rejects_non_backends() -> None:
    with pytest.raises(TypeError, match="Backend members"):
        scatterx.register_backend(object())


class _MissingLibraryBackend(UnavailableBackend):
    """A backend whose library is absent: asking its version raises, as metadata does."""

    name = "missing-lib"
    priority = 500
    capabilities: Mapping[str, frozenset[str]] = {}

    @property  # type: ignore[override]
    def version(self) -> str:
        msg = "No package metadata was found for somelib"
        raise LookupError(msg)

    def available(self) -> str | None:
        return "somelib is not installed"


def test_a_backend_whose_version_raises_is_listed_with_its_own_reason() -> None:
    missing = _MissingLibraryBackend()

    def fake_entry_points() -> list[Any]:
        return [
            *entry_points(group="scatterx.backends"),
            _EntryPoint("missing-lib", "somelib:backend", lambda: missing),
        ]

    with scoped_registry(entry_points=fake_entry_points):
        records = {r.name: r for r in scatterx.backends()}
    assert records["missing-lib"].reason == "somelib is not installed"
    assert records["numpy"].available
