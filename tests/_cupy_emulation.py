"""The host emulation of the cupy backend's kernels (g++, no GPU or cupy), for the tests.

``cupy_emulator.cpp`` turns the very text of ``_kernels.cu`` and ``_kernels_fast.cu`` into
host functions and launches them as CUDA would, from the argument lists that ``_run`` builds:
one thread at a time in a shuffled order (kernels whose bits must not depend on the order),
or, for ``scx_warps``, each warp's 32 lanes as threads that meet where ``__match_any_sync``
and ``__syncwarp`` stand. A stand-in for the few cupy calls of ``_run`` (NumPy arrays that
say they are on device 0) lets ``_run.scatter_elements`` run unchanged, so the tests cover
the Python side of every strategy as well. A GPU run (tools/gpu_check.sh) stays the test of
the hardware: memory ordering, real warps, NVRTC.

The fixtures ``emulator`` (the compiled kernels, once per session) and ``on_host`` (``_run``
on them) reach the test modules through ``tests/conftest.py``.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
import types
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scatterx._check import normalise
from scatterx.testing import assert_bitwise_equal, reference_with_free_nans
from scatterx_cupy import _compile, _fast, _run

GXX = shutil.which("g++")
FOLDER = Path(_compile.__file__).parent
EMULATOR = Path(__file__).with_name("cupy_emulator.cpp")
#: The xdist group of the tests that use the emulator: one worker builds it.
EMULATOR_GROUP = "cupy-emulator"
#: The dtypes the emulator is built for: every family of kernel types, each template once.
DTYPES = ("bool", "int32", "uint8", "float16", "float32", "float64", "complex64")


def _entries(names: list[str]) -> str:
    """The table of ``cupy_emulator.cpp``: each kernel's name, parameters and launcher."""
    lines = []
    for name in names:
        lanes = "true" if name.startswith("scx_warps<") else "false"
        kernel = f"&{name}"
        lines.append(f'{{"{name}", scx_kinds({kernel}), &scx_launch<{kernel}, {lanes}>}},')
    return "\n".join(lines) + "\n"


class Emulator:
    """The compiled kernels: ``launch(name, grid, block, args)`` as cupy's RawKernel would."""

    def __init__(self, library: Path) -> None:
        self._lib = ctypes.CDLL(str(library))
        self._lib.scx_name.restype = ctypes.c_char_p
        self._lib.scx_signature.restype = ctypes.c_char_p
        self._lib.scx_run.argtypes = [
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.POINTER(ctypes.c_void_p),
        ]
        self.kernels = {
            self._lib.scx_name(i).decode(): (i, self._lib.scx_signature(i).decode().split())
            for i in range(self._lib.scx_count())
        }
        self.launched: list[str] = []

    def launch(self, name: str, grid: tuple[int], block: tuple[int], args: tuple[Any, ...]) -> None:
        """Check the arguments against the kernel's parameters, then run it."""
        number, kinds = self.kernels[name]
        held, passed = [], []
        for arg in args:
            if isinstance(arg, np.ndarray):
                held.append(ctypes.c_void_p(arg.ctypes.data))
                passed.append(f"*{arg.itemsize}")
            elif isinstance(arg, np.int64):
                held.append(ctypes.c_longlong(int(arg)))
                passed.append("8")
            else:
                pytest.fail(f"{name}: cupy cannot pass {arg!r} as a kernel argument")
        assert passed == kinds, f"{name} takes ({', '.join(kinds)}); got ({', '.join(passed)})"
        pointers = (ctypes.c_void_p * len(held))(*(ctypes.addressof(h) for h in held))
        self.launched.append(name)
        self._lib.scx_run(number, grid[0], block[0], pointers)


@pytest.fixture(scope="session")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Emulator:
    names = [*_compile.target_expressions(), *_compile.target_expressions(fast=True)]
    names += _compile.gather_expressions()
    for key in DTYPES:
        names += _compile.name_expressions(key) + _compile.name_expressions(key, fast=True)
    folder = tmp_path_factory.mktemp("emulator")
    (folder / "entries.inc").write_text(_entries(names))
    command = [GXX, "-std=c++20", "-O1", "-ffp-contract=off", "-w", "-pthread", "-shared"]
    command += ["-fPIC", f"-I{folder}", f'-DSCX_KERNELS="{FOLDER / _compile.SOURCE}"']
    command += [f'-DSCX_FAST_KERNELS="{FOLDER / _compile.FAST_SOURCE}"']
    command += [f'-DSCX_GATHER_KERNELS="{FOLDER / _compile.GATHER_SOURCE}"']
    command += [str(EMULATOR), "-o", "emulator.so"]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return Emulator(folder / "emulator.so")


class _Device:
    id = 0

    def __init__(self) -> None:
        self.attributes = {"MultiProcessorCount": 2}

    def __enter__(self) -> _Device:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class DeviceArray(np.ndarray):  # type: ignore[type-arg]
    """A NumPy array that answers as a cupy array does to what ``_run`` asks."""

    @property
    def device(self) -> _Device:  # type: ignore[override]
        return _Device()

    def get(self) -> np.ndarray[Any, Any]:
        return np.array(self)

    def __getitem__(self, key: Any) -> Any:
        # cupy gives 0-d arrays where NumPy gives scalars.
        found = super().__getitem__(key)
        return found if isinstance(found, np.ndarray) else np.asarray(found).view(DeviceArray)


def on_device(array: Any) -> DeviceArray:
    return np.ascontiguousarray(array).view(DeviceArray)


def _then_on_device(make: Callable[..., Any]) -> Callable[..., DeviceArray]:
    return lambda *args, **kwargs: on_device(make(*args, **kwargs))


def _fake_cupy() -> types.ModuleType:
    """The cupy calls of ``_run`` and ``_gather``, on NumPy arrays (``DeviceArray``)."""
    fake = types.ModuleType("cupy")
    fake.uint8, fake.uint32, fake.uint64 = np.uint8, np.uint32, np.uint64  # type: ignore[attr-defined]
    fake.ndarray = DeviceArray  # type: ignore[attr-defined]
    fake.asarray = on_device  # type: ignore[attr-defined]
    fake.ascontiguousarray = on_device  # type: ignore[attr-defined]
    for name in ("full", "empty", "zeros", "argsort"):
        setattr(fake, name, _then_on_device(getattr(np, name)))
    stream = types.SimpleNamespace(synchronize=lambda: None)
    fake.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        Device=lambda _id=0: _Device(), get_current_stream=lambda: stream
    )
    return fake


class _Function:
    def __init__(self, emulator: Emulator, name: str) -> None:
        self.emulator, self.name = emulator, name

    def __call__(self, grid: tuple[int], block: tuple[int], args: tuple[Any, ...]) -> None:
        self.emulator.launch(self.name, grid, block, args)


class _Module:
    """A compiled module: only the kernels that ``_compile`` puts in it."""

    def __init__(self, emulator: Emulator, name: str, fast: bool) -> None:
        self.names = _compile.expressions(name, fast)
        self.emulator = emulator

    def get_function(self, name: str) -> _Function:
        assert name in self.names, f"{name} is not in this module"
        return _Function(self.emulator, name)


@pytest.fixture
def on_host(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """``_run`` with the fake cupy and the emulated kernels; the env var unset."""
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(_compile, "module", lambda name, fast=False: _Module(emulator, name, fast))
    monkeypatch.delenv(_fast.ENV_VAR, raising=False)
    _fast.set_fast_paths(None)
    caches = (_run._geometry, _run._device_threads)  # may hold real cupy arrays, or fakes
    for cache in caches:
        cache.cache_clear()
    emulator.launched.clear()
    yield emulator
    for cache in caches:
        cache.cache_clear()
    _fast.set_fast_paths(None)


def device_request(data: Any, indices: Any, updates: Any, axis: int, reduction: str) -> Any:
    request = normalise(data, indices, updates, axis, reduction)
    moved = (on_device(a) for a in (request.data, request.indices, request.updates))
    return request._replace(**dict(zip(("data", "indices", "updates"), moved, strict=True)))


def run_on_host(case: tuple[Any, Any, Any, int], reduction: str, force: str | None) -> None:
    data, indices, updates, axis = case
    expected, free_nans = reference_with_free_nans(data, indices, updates, axis, reduction)
    result = _run.scatter_elements(device_request(*case, reduction), force=force)
    assert isinstance(result, DeviceArray)
    assert_bitwise_equal(result.get(), expected, any_nan=free_nans)


def _values(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> Any:
    """Few distinct values: ties, both zeros, infinities, NaNs of several payloads and signs."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return (rng.integers(0, 4, shape) * 85).astype(np.uint8).view(np.bool_)  # any nonzero
    if dt.kind in "iu":
        return rng.integers(0, 5, shape).astype(dt)
    pool = np.array([0.0, -0.0, 1.5, -1.5, 2.0, np.inf, -np.inf, 3.25])
    values = np.empty(shape, dtype=dt)
    values.real = rng.choice(pool, shape)
    if dt.kind == "c":
        values.imag = rng.choice(pool, shape)
    if dt.name in ("float64", "complex128"):
        values.reshape(-1)[::13] = np.nan
        return values
    # float16, float32 and complex64's parts: a quiet and a signalling NaN, of either sign
    half = dt.name == "float16"
    uint, part = (np.uint16, np.float16) if half else (np.uint32, np.float32)
    quiet, signalling = (0x7E01, 0xFC11) if half else (0x7FC00123, 0xFFA00077)
    parts = values.reshape(-1).view(part)
    parts[::13] = np.array(quiet, dtype=uint).view(part)
    parts[5::17] = np.array(signalling, dtype=uint).view(part)
    return values


def case_arrays(
    dtype: str, geometry: Any, seed: int = 0, hot: int = 0, rows: bool = False
) -> tuple[Any, Any, Any, int]:
    """Data, indices, updates and axis; ``hot``: indices in ``[0, hot)`` (many repeats);
    ``rows``: each index row one target along the inner dims, in either sign."""
    shape, index_shape, axis = geometry
    rng = np.random.default_rng(zlib.crc32(repr((dtype, geometry, seed, hot, rows)).encode()))
    indices = rng.integers(-shape[axis], shape[axis], index_shape)
    if hot:
        indices %= hot
    if rows:
        first = tuple(slice(None) if d <= axis else slice(0, 1) for d in range(len(index_shape)))
        indices = np.ascontiguousarray(np.broadcast_to(indices[first], index_shape))
        negative = indices % shape[axis] - shape[axis]
        indices = np.where(rng.random(index_shape) < 0.5, indices, negative)
    return _values(rng, dtype, shape), indices, _values(rng, dtype, index_shape), axis


#: (data shape, index shape, axis): 1-D, inner dims, skipped dims, a merged inner dim.
GEOMETRIES = [
    ((40,), (300,), 0),
    ((9, 7, 5), (12, 6, 5), 0),
    ((6, 33, 4), (5, 40, 3), 1),
    ((2, 3, 4, 5), (1, 3, 2, 5), 2),
    ((7, 3, 4), (50, 3, 4), 0),
    ((2, 7, 3, 4), (2, 50, 3, 2), 1),
]
#: The axis innermost in indices (warps), with a partial last chunk of 32 steps.
LAST_AXIS = [((40,), (300,), 0), ((6, 33), (5, 70), 1), ((4, 3, 100), (4, 3, 97), 2)]
#: Geometries with inner dims, for whole index rows (rows).
WITH_ROWS = [g for g in GEOMETRIES if len(g[1]) > g[2] + 1]
