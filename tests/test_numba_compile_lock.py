"""numba's cache index is not safe for two processes compiling at once: the first call of
a signature takes a lock that processes share (scatterx_numba._runtime.between_processes)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scatterx_numba import _runtime

fcntl = pytest.importorskip("fcntl")


@pytest.fixture(autouse=True)
def _threads_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip the workqueue guard, which asks numba for a threading layer these serial
    kernels never start."""
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
    """A dispatcher that says which types it has compiled, and records the lock's state."""

    def __init__(self, compiled: bool) -> None:
        self.overloads = {("array",): "code"} if compiled else {}
        self.lock_held: list[bool] = []

    def typeof_pyval(self, value: Any) -> str:
        return "array"

    def __call__(self, *args: Any) -> int:
        self.lock_held.append(_held_by_another())
        return 7


@pytest.mark.parametrize("compiled", [False, True])
def test_only_a_call_that_may_compile_takes_the_lock(compiled: bool) -> None:
    kernel = FakeKernel(compiled)
    assert _runtime.launch(kernel, np.zeros(3)) == 7
    assert kernel.lock_held == [not compiled]
    assert not _held_by_another()  # released after the call


def test_the_lock_is_released_when_the_call_raises() -> None:
    class Failing(FakeKernel):
        def __call__(self, *args: Any) -> int:
            msg = "compile failed"
            raise RuntimeError(msg)

    with pytest.raises(RuntimeError, match="compile failed"):
        _runtime.launch(Failing(compiled=False), np.zeros(3))
    assert not _held_by_another()


def test_a_real_kernel_knows_its_compiled_signatures() -> None:
    numba = pytest.importorskip("numba")

    @numba.njit
    def total(values: Any) -> Any:
        return values.sum()

    values = np.arange(4.0)
    assert not _runtime.compiled(total, (values,))
    assert _runtime.launch(total, values) == 6.0
    assert _runtime.compiled(total, (values,))
    assert not _runtime.compiled(total, (values.astype(np.float32),))
