"""The memory of large results, kept for the next result of its size
(``scatterx._result_pool``): given again only once nothing uses it, never to two results
at once, and never more than the limit held."""

from __future__ import annotations

import json
import sys
import threading
import time
import weakref
from collections.abc import Iterator

import numpy as np
import pytest

import scatterx
from _subprocess import run_python
from scatterx import _result_pool, backend
from scatterx._result_buffer import HUGE_PAGE
from scatterx.backend import empty_aligned

SHAPE = (1 << 16,)  # 256 KiB of float32: large, once the test lowers the threshold


@pytest.fixture(autouse=True)
def _pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An empty pool, and results from 64 KiB held (the threshold is 32 MiB)."""
    monkeypatch.delenv(_result_pool.ENV_VAR, raising=False)
    monkeypatch.setattr(backend, "PAGE_ALIGNED_FROM_BYTES", 1 << 16)
    _result_pool.release()
    yield
    _result_pool.release()


def test_a_dropped_results_memory_goes_to_the_next_result_of_its_size() -> None:
    first = empty_aligned(SHAPE, np.float32)
    memory = weakref.ref(first.base)
    del first
    assert memory() is not None  # held
    second = empty_aligned(SHAPE, np.float32)
    assert second.base is memory()
    assert second.ctypes.data % HUGE_PAGE == 0
    other = empty_aligned((SHAPE[0] + 1,), np.float32)  # another size: other memory
    assert other.base is not memory()


@pytest.mark.parametrize(
    "keep",
    [
        lambda r: r[::2],
        lambda r: r.reshape(4, -1).T,
        lambda r: r.base,
        memoryview,
        lambda r: np.frombuffer(r, np.uint8),
        lambda r: r.__dlpack__(),
    ],
    ids=["view", "transposed-view", "base", "memoryview", "frombuffer", "dlpack-capsule"],
)
def test_memory_still_in_use_is_not_given_again(keep: object) -> None:
    first = empty_aligned(SHAPE, np.float32)
    first[...] = 7.0
    memory = weakref.ref(first.base)
    kept = keep(first)  # type: ignore[operator]
    del first
    second = empty_aligned(SHAPE, np.float32)
    second[...] = -1.0
    assert second.base is not memory()
    assert memory() is not None
    assert kept is not None
    del kept
    third = empty_aligned(SHAPE, np.float32)  # free now
    assert third.base is memory()


def test_a_torch_tensor_of_a_result_keeps_its_memory() -> None:
    torch = pytest.importorskip("torch")
    result = scatterx.scatter_elements(
        np.zeros(SHAPE, np.float32), np.array([0, 5]), np.array([1.0, 2.0], np.float32)
    )
    tensor = torch.from_numpy(result)
    memory = weakref.ref(result.base)
    del result
    again = empty_aligned(SHAPE, np.float32)
    again[...] = 9.0
    assert again.base is not memory()
    assert tensor[0].item() == 1.0
    assert tensor[5].item() == 2.0
    assert int((tensor != 0).sum()) == 2


def test_threads_never_share_a_result() -> None:
    failures: list[str] = []
    start = threading.Barrier(4)

    def work(mark: int) -> None:
        start.wait()
        for _ in range(200):
            result = empty_aligned(SHAPE, np.float32)
            result[...] = mark
            time.sleep(0)  # the other threads run here
            if not (result == mark).all():
                failures.append(f"thread {mark} saw another thread's writes")
            del result

    threads = [threading.Thread(target=work, args=(mark,)) for mark in range(4)]
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
    assert len(_result_pool._HELD) <= _result_pool.KEEP


def test_at_most_keep_buffers_and_the_limit_are_held(monkeypatch: pytest.MonkeyPatch) -> None:
    results = [empty_aligned(SHAPE, np.float32) for _ in range(5)]
    assert len(_result_pool._HELD) == _result_pool.KEEP
    assert results[-1].base is _result_pool._HELD[-1]
    del results
    nbytes = SHAPE[0] * 4 + HUGE_PAGE
    monkeypatch.setenv(_result_pool.ENV_VAR, str(nbytes + 1))  # room for one
    _result_pool.release()
    kept = [empty_aligned(SHAPE, np.float32) for _ in range(3)]
    assert len(_result_pool._HELD) == 1
    assert sum(b.nbytes for b in _result_pool._HELD) <= nbytes + 1
    assert kept[-1].base is _result_pool._HELD[0]


def test_a_limit_of_zero_holds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_result_pool.ENV_VAR, "0")
    result = empty_aligned(SHAPE, np.float32)
    assert result.ctypes.data % HUGE_PAGE == 0
    assert _result_pool._HELD == []


@pytest.mark.parametrize("value", ["lots", "-1", "1.5"])
def test_an_unreadable_limit_says_which_variable(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(_result_pool.ENV_VAR, value)
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
from scatterx import _result_pool
from scatterx.backend import empty_aligned

shape = ((1 << 25) // 4,)  # 32 MiB: above glibc's largest mmap threshold, and the pool's
faults = []
for held in ("0", "", ""):
    os.environ[_result_pool.ENV_VAR] = held
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
