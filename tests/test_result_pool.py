"""The memory of large results, kept for the next result of its size
(``scatterx._results``): given again only once nothing uses it, never to two results at
once, and never more than the limit held."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import scatterx
from _subprocess import run_python
from scatterx import _results, backend
from scatterx._results import HUGE_PAGE
from scatterx.backend import empty_aligned

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
SHAPE = (1 << 16,)  # 256 KiB of float32: large, once the test lowers the threshold


@pytest.fixture(autouse=True)
def _pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An empty pool, and results from 64 KiB held (the threshold is 32 MiB)."""
    monkeypatch.delenv(_results.ENV_VAR, raising=False)
    monkeypatch.setattr(backend, "PAGE_ALIGNED_FROM_BYTES", 1 << 16)
    _results.release()
    yield
    _results.release()


def _held(address: int) -> bool:
    """Whether the pool holds the memory at ``address``."""
    return any(
        held.memory.ctypes.data <= address < held.memory.ctypes.data + held.memory.nbytes
        for held in _results._HELD
    )


def test_a_dropped_results_memory_goes_to_the_next_result_of_its_size() -> None:
    first = empty_aligned(SHAPE, np.float32)
    address = first.ctypes.data
    del first
    assert _held(address)
    second = empty_aligned(SHAPE, np.float32)
    assert second.ctypes.data == address
    assert second.ctypes.data % HUGE_PAGE == 0
    assert second.flags.writeable
    assert second.flags.c_contiguous
    other = empty_aligned((SHAPE[0] + 1,), np.float32)  # another size: other memory
    assert not np.shares_memory(other, second)


KEEPS: dict[str, Callable[[Any], object]] = {
    "view": lambda r: r[::2],
    "transposed-view": lambda r: r.reshape(4, -1).T,
    "view-of-a-slice": lambda r: r[1:][::3],
    "base": lambda r: r.base,
    "memoryview": memoryview,
    "memoryview-of-a-slice": lambda r: memoryview(r[1:]),
    "frombuffer": lambda r: np.frombuffer(r, np.uint8),
    "asarray-of-a-memoryview": lambda r: np.asarray(memoryview(r[1:])),
    "dlpack-capsule": lambda r: r.__dlpack__(),
    "dlpack-capsule-of-a-slice": lambda r: r[1:].__dlpack__(),
    "from-dlpack": lambda r: np.from_dlpack(r[1:]),
}


@pytest.mark.parametrize("keep", KEEPS.values(), ids=KEEPS.keys())
def test_memory_still_in_use_is_not_given_again(
    keep: Callable[[Any], object],
) -> None:
    first = empty_aligned(SHAPE, np.float32)
    first[...] = 7.0
    address = first.ctypes.data
    kept = keep(first)
    del first
    second = empty_aligned(SHAPE, np.float32)
    second[...] = -1.0
    assert second.ctypes.data != address
    assert _held(address)
    assert kept is not None
    del kept
    third = empty_aligned(SHAPE, np.float32)  # free now
    assert third.ctypes.data == address


TENSORS: dict[str, Callable[[Any, np.ndarray[Any, Any]], Any]] = {
    "from_numpy": lambda torch, r: torch.from_numpy(r),
    "from_numpy-of-a-slice": lambda torch, r: torch.from_numpy(r[1:]),
    "from_dlpack-of-a-slice": lambda torch, r: torch.from_dlpack(r[1:]),
}


@pytest.mark.parametrize("tensor_of", TENSORS.values(), ids=TENSORS.keys())
def test_a_torch_tensor_of_a_result_keeps_its_memory(
    tensor_of: Callable[[Any, np.ndarray[Any, Any]], Any],
) -> None:
    torch = pytest.importorskip("torch")
    result = scatterx.scatter_elements(
        np.zeros(SHAPE, np.float32), np.array([0, 5]), np.array([1.0, 2.0], np.float32)
    )
    tensor = tensor_of(torch, result)[-5:]  # a view of the tensor: the last 5 elements
    address = result.ctypes.data
    del result
    again = empty_aligned(SHAPE, np.float32)
    again[...] = 9.0
    assert again.ctypes.data != address
    assert int((tensor != 0).sum()) == 0
    del tensor
    assert empty_aligned(SHAPE, np.float32).ctypes.data == address


THREADS = 8


def test_threads_never_share_a_result() -> None:
    failures: list[str] = []
    live: set[int] = set()  # the addresses of the results the threads hold
    live_lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def work(mark: int) -> None:
        start.wait()
        for _ in range(200):
            result = empty_aligned(SHAPE, np.float32)
            address = result.ctypes.data
            with live_lock:
                if address in live:
                    failures.append(f"thread {mark} got a result another thread holds")
                live.add(address)
            result[...] = mark
            time.sleep(0)  # the other threads run here
            if not (result == mark).all():
                failures.append(f"thread {mark} saw another thread's writes")
            view = result[1:]  # the result dropped first, a view of it last
            del result
            time.sleep(0)
            with live_lock:
                live.discard(address)
            del view

    threads = [threading.Thread(target=work, args=(mark,)) for mark in range(THREADS)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, inside the pool's steps too
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
    assert len(_results._HELD) <= _results.KEEP


def test_at_most_keep_buffers_and_the_limit_are_held(monkeypatch: pytest.MonkeyPatch) -> None:
    results = [empty_aligned(SHAPE, np.float32) for _ in range(5)]
    assert len(_results._HELD) == _results.KEEP
    assert np.shares_memory(results[-1], _results._HELD[-1].memory)
    del results
    nbytes = SHAPE[0] * 4 + HUGE_PAGE
    monkeypatch.setenv(_results.ENV_VAR, str(nbytes + 1))  # room for one
    _results.release()
    kept = [empty_aligned(SHAPE, np.float32) for _ in range(3)]
    assert len(_results._HELD) == 1
    assert sum(held.memory.nbytes for held in _results._HELD) <= nbytes + 1
    assert np.shares_memory(kept[-1], _results._HELD[0].memory)
    assert (np.diff(sorted(k.ctypes.data for k in kept)) > 0).all()  # three memories


def test_a_limit_of_zero_holds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_results.ENV_VAR, "0")
    result = empty_aligned(SHAPE, np.float32)
    assert result.ctypes.data % HUGE_PAGE == 0
    assert _results._HELD == []


@pytest.mark.parametrize("value", ["lots", "-1", "1.5"])
def test_an_unreadable_limit_says_which_variable(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(_results.ENV_VAR, value)
    with pytest.raises(ValueError, match=f"SCATTERX_RESULT_POOL_BYTES .*{value!r}"):
        empty_aligned(SHAPE, np.float32)


#: Page faults of writing a 32 MiB result three times, in a fresh interpreter: new memory
#: (nothing held), then held memory given for the first time, then the same given again.
#: Fresh, because glibc gives an allocation above its mmap threshold a free chunk of its
#: heap that is large enough before it maps new memory: after other tests (in one pytest
#: worker), "new" memory could be pages already written, and fault none.
FAULTS_SCRIPT = """
import json, os, resource
import numpy as np
from scatterx import _results
from scatterx.backend import empty_aligned

shape = ((1 << 25) // 4,)  # 32 MiB: above glibc's largest mmap threshold, and the pool's
faults = []
for held in ("0", "", ""):
    os.environ[_results.ENV_VAR] = held
    result = empty_aligned(shape, np.float32)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    result.fill(1.0)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    del result
print(json.dumps(faults))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts Linux's page faults")
def test_writing_a_result_in_held_memory_faults_no_page() -> None:
    new, first_held, reused = json.loads(run_python(FAULTS_SCRIPT))
    assert new >= 16  # one a 2 MiB huge page at best
    assert first_held >= 16
    assert reused < 8
    if THP.exists() and "[never]" not in THP.read_text():
        assert first_held < 512  # NumPy's huge-page advice holds for held memory too
