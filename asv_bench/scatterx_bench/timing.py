"""Timing contestants so that a cell can be judged: interleaved rounds, a spread per median.

On a 2-core machine shared with others, timing each contestant in a block lets the load of
the moment, and the thread pools of the contestant before (torch's and onnxruntime's spin
after a call), decide a cell. Here every round runs every contestant in turn, a few calls
each, with an idle pause between turns and a longer one between rounds; the order rotates
from round to round. Each contestant's time is the median of its round medians, and its
spread is half the interquartile range of those round medians over their median:
``2.15 ±8%`` says that the middle half of the rounds lay within about 8% of 2.15 ms. Not
the whole range: on a shared machine one round in seven meets another's burst, and the
half range then says more about the neighbours than about the cell.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import NamedTuple

from .base import Call

#: Rounds, calls per contestant in each round, the idle pauses (seconds) between turns and
#: between rounds: long enough for a thread pool to stop spinning (onnxruntime and OpenMP
#: pools spin for some milliseconds after a call; KMP_BLOCKTIME's default is 200 ms).
ROUNDS, CALLS, TURN_PAUSE_S, ROUND_PAUSE_S = 7, 5, 0.05, 0.25
#: Untimed calls open each turn until this many milliseconds have passed (one call at
#: least): after an idle pause the cores of a virtual machine run slowly for a few
#: milliseconds (a NumPy sum of 4 MiB here: 450, 250, 150 us, then 142 us steadily; a
#: 2-thread numba scatter of 0.7 ms: 2.5, 1.9, 1.4, 0.9 ms), which would otherwise decide
#: the cells of short calls by whichever contestant leaves that state faster. On
#: 2026-12-03 at 14:15 the ramp was longer: a 0.95 ms call (last-axis-sparse in place)
#: took 5.5, 2.8, 2.1, 1.6, 1.4, 1.1, 1.1, 1.1, 1.0 ms (20 ms to its steady time), its hand
#: loop 4.6, 2.7, 1.6, 1.1, 1.1, 1.0 ms; 10 ms of settling left scatterx 1.5x its hand
#: loop there, 40 ms 0.98x (median of 15 rounds).
SETTLE_MS = 30.0
#: ... and after that, while each untimed call is still this much faster than the one
#: before it (the ramp is not over), up to :data:`SETTLE_CAP_MS` in all.
SETTLE_FALLING = 0.9
SETTLE_CAP_MS = 60.0

#: A cell whose spread is over this is marked: its median does not judge it.
SPREAD_LIMIT = 0.20

#: How :func:`interleaved` measures, in words: the "statistic" of a record.
STATISTIC = (
    "median of per-round medians, contestants interleaved in {rounds} rounds of {calls} "
    "calls each after one untimed call, an idle pause between turns and between rounds, "
    f"each turn opening with {SETTLE_MS:g} ms of untimed calls, then more while each is "
    f"under {SETTLE_FALLING:g} times the one before ({SETTLE_CAP_MS:g} ms at most); "
    "spread: half the interquartile range of the round medians over their median"
)


class Timed(NamedTuple):
    """One contestant's time: the median of its round medians (ms), its relative spread."""

    median_ms: float
    spread: float
    rounds_ms: tuple[float, ...]

    @property
    def noisy(self) -> bool:
        """Whether the spread is over :data:`SPREAD_LIMIT`: the cell is not to be judged."""
        return self.spread > SPREAD_LIMIT


def of_rounds(rounds_ms: list[float]) -> Timed:
    """The median and spread of one contestant's round medians (one round: no spread)."""
    median = statistics.median(rounds_ms)
    if len(rounds_ms) < 2 or median <= 0:
        return Timed(median, 0.0, tuple(rounds_ms))
    q1, _, q3 = statistics.quantiles(rounds_ms, n=4, method="inclusive")
    return Timed(median, (q3 - q1) / (2 * median), tuple(rounds_ms))


def interleaved(
    calls: Mapping[str, Call],
    rounds: int = ROUNDS,
    per_round: int = CALLS,
    *,
    pauses_s: tuple[float, float] = (TURN_PAUSE_S, ROUND_PAUSE_S),
    settle_ms: float = SETTLE_MS,
    warm: bool = True,
    clock: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Timed]:
    """Time ``calls`` interleaved: ``rounds`` rounds, each contestant ``per_round`` calls a turn.

    ``pauses_s`` are the idle pauses between turns and between rounds; each turn opens with
    untimed calls (:func:`settle`: ``settle_ms``, :data:`SETTLE_MS`, and more while they
    still speed up; 0: none); each contestant runs once
    untimed first (``warm``: compiles, first runs). ``clock`` and ``sleep`` are the timer's
    (a test gives fakes).
    """
    if rounds < 1 or per_round < 1:
        msg = "rounds and calls per round must be 1 or more"
        raise ValueError(msg)
    names = list(calls)
    if warm:
        for name in names:
            calls[name]()
            sleep(pauses_s[0])
    samples: dict[str, list[float]] = {name: [] for name in names}
    for k in range(rounds):
        if k:
            sleep(pauses_s[1])
        shift = k % len(names) if names else 0
        for turn, name in enumerate(names[shift:] + names[:shift]):
            if turn:
                sleep(pauses_s[0])
            samples[name].append(_turn(calls[name], per_round, settle_ms, clock))
    return {name: of_rounds(samples[name]) for name in names}


def _turn(call: Call, per_round: int, settle_ms: float, clock: Callable[[], float]) -> float:
    """The median ms of ``per_round`` calls in a row, after :func:`settle`."""
    if settle_ms > 0:
        settle(call, settle_ms, clock)
    times = []
    for _ in range(per_round):
        start = clock()
        call()
        times.append((clock() - start) * 1e3)
    return statistics.median(times)


def settle(call: Call, settle_ms: float, clock: Callable[[], float]) -> int:
    """Untimed calls for ``settle_ms``, then while each is under :data:`SETTLE_FALLING`
    times the one before, for :data:`SETTLE_CAP_MS` at most (or ``settle_ms``, if longer);
    returns how many ran."""
    cap_ms = max(settle_ms, SETTLE_CAP_MS)
    start, before, count = clock(), float("inf"), 0
    while True:
        began = clock()
        call()
        count += 1
        now = clock()
        took, elapsed_ms = now - began, (now - start) * 1e3
        falling = took < SETTLE_FALLING * before
        if elapsed_ms >= cap_ms or (elapsed_ms >= settle_ms and not falling):
            return count
        before = took


def cell(median_ms: float, spread: float | None = None) -> str:
    """A table's cell: ``2.15 ±8%``, with ``!`` after a spread over the limit; the median
    alone where it has no spread (a contestant timed in a block)."""
    if spread is None:
        return f"{median_ms:.2f}"
    mark = "!" if spread > SPREAD_LIMIT else ""
    return f"{median_ms:.2f} ±{spread * 100:.0f}%{mark}"


def legend() -> str:
    """The line under a table with spreads: what the ± and the ``!`` mean."""
    return (
        f"±: half the interquartile range of the round medians over the median; !: spread over "
        f"{SPREAD_LIMIT:.0%}, the cell is not to be judged"
    )
