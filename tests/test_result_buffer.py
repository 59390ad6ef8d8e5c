"""Fresh results' memory: XLA's result buffers lent to a backend's result, the huge pages
asked for them, and the alignment of large new arrays."""

from __future__ import annotations

import mmap
import resource
import sys
from pathlib import Path

import numpy as np
import pytest

from scatterx import _results
from scatterx._results import HUGE_PAGE, PAGE, advise_huge_pages, lent, results_into
from scatterx.backend import ALIGNMENT, PAGE_ALIGNED_FROM_BYTES, empty_aligned

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _advised(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    calls: list[tuple[int, int, int]] = []

    def madvise(address: int, length: int, advice: int) -> int:
        calls.append((address, length, advice))
        return 0

    monkeypatch.setattr(_results, "_madvise", lambda: madvise)
    return calls


def test_a_large_lent_buffer_is_advised_over_its_whole_huge_pages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _advised(monkeypatch)
    buffer = np.empty((5 << 20) + 12345, np.uint8)[7:]  # no page boundary at either end
    with results_into(buffer):
        assert lent(buffer.shape, buffer.dtype) is buffer
    ((address, length, advice),) = calls
    # The buffer's whole 4 KiB pages, then the whole 2 MiB pages among them.
    first = buffer.ctypes.data // PAGE * PAGE
    last = -(-(buffer.ctypes.data + buffer.nbytes) // PAGE) * PAGE
    assert advice == 14  # MADV_HUGEPAGE
    assert address % HUGE_PAGE == 0
    assert length % HUGE_PAGE == 0
    assert length > 0
    assert first <= address < first + HUGE_PAGE
    assert last - HUGE_PAGE < address + length <= last


@pytest.mark.parametrize(("short", "reaches"), [(64, True), (PAGE - 1, True), (PAGE + 64, False)])
def test_a_huge_page_in_the_buffers_last_page_counts(
    monkeypatch: pytest.MonkeyPatch, short: int, reaches: bool
) -> None:
    # XLA's 32 MiB result ends 4,032 bytes short of a 2 MiB boundary, in its last page.
    calls = _advised(monkeypatch)
    base = np.empty(6 * HUGE_PAGE, np.uint8)
    boundary = base.ctypes.data + -base.ctypes.data % HUGE_PAGE + 4 * HUGE_PAGE
    start = boundary - 3 * HUGE_PAGE + PAGE + 64 - base.ctypes.data  # past a page: not counted
    buffer = base[start : boundary - short - base.ctypes.data]
    advise_huge_pages(buffer)
    ((address, length, _),) = calls
    assert address == boundary - 2 * HUGE_PAGE
    assert address + length == (boundary if reaches else boundary - HUGE_PAGE)


def test_small_buffers_are_not_advised(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _advised(monkeypatch)
    with results_into(np.empty((1 << 22) - 1, np.uint8)):
        pass
    assert calls == []


def test_a_buffer_without_a_whole_huge_page_is_not_advised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _advised(monkeypatch)
    monkeypatch.setattr(_results, "HUGE_PAGES_FROM_BYTES", 1)
    base = np.empty(3 * HUGE_PAGE, np.uint8)
    start = -base.ctypes.data % HUGE_PAGE + HUGE_PAGE // 2  # straddles one boundary
    advise_huge_pages(base[start : start + HUGE_PAGE])
    assert calls == []


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not THP.exists() or "[never]" in THP.read_text(),
    reason="needs Linux with transparent huge pages",
)
def test_writing_an_advised_buffer_faults_per_huge_page() -> None:
    size = 16 * HUGE_PAGE
    counts = []
    for advise in (False, True):
        memory = mmap.mmap(-1, size + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        buffer = np.frombuffer(memory, np.uint8)
        buffer = buffer[-buffer.ctypes.data % HUGE_PAGE :][:size]
        if advise:
            advise_huge_pages(buffer)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        buffer.fill(1)
        counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        assert (buffer == 1).all()
        del buffer
        memory.close()
    plain, advised = counts
    assert plain >= size // mmap.PAGESIZE // 2
    assert advised < plain // 8


@pytest.mark.parametrize(
    ("nbytes", "alignment"),
    [
        (PAGE_ALIGNED_FROM_BYTES - ALIGNMENT, ALIGNMENT),
        (PAGE_ALIGNED_FROM_BYTES, HUGE_PAGE),
        (3 * PAGE_ALIGNED_FROM_BYTES // 2 + 4, HUGE_PAGE),
    ],
)
def test_results_over_glibcs_mmap_threshold_start_on_a_huge_page(
    nbytes: int, alignment: int
) -> None:
    for _ in range(3):  # each allocation anew: the alignment is not the allocator's luck
        result = empty_aligned((nbytes // 4,), np.float32)
        assert result.ctypes.data % alignment == 0
        assert result.flags.c_contiguous
        assert result.flags.writeable
        assert result.nbytes == nbytes // 4 * 4
        result[-1] = 1.0  # the whole array is the caller's
