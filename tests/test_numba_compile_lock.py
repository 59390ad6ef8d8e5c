"""numba's cache index is not safe for two processes compiling at once: the first call of
a signature takes a lock that processes share (scatterx_numba._runtime.between_processes)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from scatterx_numba import _runtime

fcntl = pytest.importorskip("fcntl")


@pytest.fixture(autouse=True)
def _own_lock(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """A lock file of this test's own (other processes compiling for real take the shared
    one), and no workqueue guard, which asks numba for a threading layer these kernels
    never start."""
    monkeypatch.setattr(_runtime, "COMPILE_LOCK", tmp_path / "compile.lock")
    monkeypatch.setattr(_runtime, "_unguarded", True)


def _held_by_another(lock: Path | None = None) -> bool:
    with open(_runtime.COMPILE_LOCK if lock is None else lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


class FakeKernel:
    """A kernel that records whether another process could take the lock as it runs."""

    def __init__(self) -> None:
        self.lock_held: list[bool] = []

    def __call__(self, *args: Any) -> int:
        self.lock_held.append(_held_by_another())
        return 7


def test_a_call_takes_the_lock_until_its_kinds_of_arguments_have_run() -> None:
    kernel = FakeKernel()
    values = np.zeros((3, 2))
    for arguments in [(values, (1, 2.0)), (values + 1, (3, 4.0)), (values.T, (1, 2.0))]:
        assert _runtime.launch(kernel, *arguments) == 7
    # A Fortran-ordered array is another numba type: another signature, maybe compiled.
    assert kernel.lock_held == [True, False, True]
    assert not _held_by_another()  # released after each call
    _runtime.launch(kernel, values.astype(np.float32), (1, 2.0))
    _runtime.launch(kernel, values, (1, 2))
    assert kernel.lock_held[3:] == [True, True]


def test_kinds_tell_apart_what_numba_types_apart() -> None:
    values = np.zeros((4, 4))
    readonly = values.view()
    readonly.flags.writeable = False
    unaligned = np.frombuffer(bytearray(8 * 16 + 1), np.uint8)[1:].view(np.float64)
    variants = [values, values.T, values[:, ::2], readonly, values[None], values.astype(">f8")]
    variants += [unaligned.reshape(4, 4), values.astype(np.float32)]
    assert not variants[-2].flags.aligned
    keys = {_runtime.kinds(v) for v in variants}
    assert len(keys) == len(variants)
    assert _runtime.kinds((values, 1, 1.0, True)) != _runtime.kinds((values, 1.0, 1, True))


def test_the_lock_is_released_when_the_call_raises() -> None:
    class Failing(FakeKernel):
        def __call__(self, *args: Any) -> int:
            msg = "compile failed"
            raise RuntimeError(msg)

    with pytest.raises(RuntimeError, match="compile failed"):
        _runtime.launch(Failing(), np.zeros(3))
    assert not _held_by_another()


class IndexedKernel(FakeKernel):
    """A kernel with a cache index of its own, as numba's ``cache=True`` dispatchers have;
    it records whether another process could take its own lock, and the shared one."""

    def __init__(self, index: Path) -> None:
        super().__init__()
        self._cache = SimpleNamespace(_cache_file=SimpleNamespace(_index_path=str(index)))
        self.shared_held: list[bool] = []

    def __call__(self, *args: Any) -> int:
        self.lock_held.append(_held_by_another(_runtime.compile_lock(self)))
        self.shared_held.append(_held_by_another())
        return 7


def test_each_cache_index_has_a_lock_of_its_own(tmp_path: Path) -> None:
    first, second = IndexedKernel(tmp_path / "a.nbi"), IndexedKernel(tmp_path / "b.nbi")
    locks = {_runtime.compile_lock(kernel) for kernel in (first, second)}
    assert len(locks) == 2
    assert _runtime.COMPILE_LOCK not in locks
    assert _runtime.compile_lock(IndexedKernel(tmp_path / "a.nbi")) in locks
    assert _runtime.compile_lock(FakeKernel()) == _runtime.COMPILE_LOCK
    for kernel in (first, second):
        assert _runtime.launch(kernel, np.zeros(3)) == 7
        assert kernel.lock_held == [True]  # its own index's turn is taken
        assert kernel.shared_held == [False]  # another kernel's compile goes on meanwhile
    assert not _held_by_another(_runtime.compile_lock(first))


def test_numbas_cached_kernels_name_their_own_index() -> None:
    kernels = [_runtime.pass_kernel("index_range"), _runtime.pass_kernel("copy_words")]
    locks = [_runtime.compile_lock(kernel) for kernel in kernels]
    assert len(set(locks)) == 2
    assert _runtime.COMPILE_LOCK not in locks
    assert locks[0] == _runtime.compile_lock(_runtime.pass_kernel("index_range"))
