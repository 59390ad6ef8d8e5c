"""numba's cache index is not safe for two processes compiling at once: the first call of
a signature takes a lock that processes share (scatterx_numba._runtime.between_processes)."""

from __future__ import annotations

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


def _held_by_another() -> bool:
    with open(_runtime.COMPILE_LOCK, "a") as handle:
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
    variants = [values, values.T, values[:, ::2], readonly, values[None], values.astype(">f8")]
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
