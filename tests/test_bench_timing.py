"""The timing of the bench's tables (:mod:`scatterx_bench.timing`), on calls whose duration a
fake clock sets: interleaved rounds, their medians and spreads, and how the tables show them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scatterx_bench.report import StandardRow, record
from scatterx_bench.table import print_table
from scatterx_bench.timing import SETTLE_CAP_MS, cell, interleaved, of_rounds, settle


class FakeClock:
    """A clock that only calls and pauses move: each call lasts what its script says."""

    def __init__(self) -> None:
        self.now = 0.0
        self.log: list[str] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.log.append(f"pause {seconds}")
        self.now += seconds

    def call(self, name: str, durations_ms: list[float]) -> Callable[[], None]:
        """A call named ``name`` lasting each of ``durations_ms`` in turn, then the last."""
        left = list(durations_ms)

        def run() -> None:
            self.log.append(name)
            self.now += (left.pop(0) if len(left) > 1 else left[0]) / 1e3

        return run


def test_contestants_take_turns_in_rounds_with_pauses_between() -> None:
    clock = FakeClock()
    calls = {"a": clock.call("a", [1.0]), "b": clock.call("b", [2.0])}
    timed = interleaved(
        calls,
        rounds=2,
        per_round=2,
        pauses_s=(0.1, 0.5),
        settle_ms=0,
        clock=clock,
        sleep=clock.sleep,
    )
    # The untimed calls, then round 1 (a, b) and round 2 in the rotated order (b, a).
    assert clock.log == [
        *["a", "pause 0.1", "b", "pause 0.1"],
        *["a", "a", "pause 0.1", "b", "b"],
        *["pause 0.5", "b", "b", "pause 0.1", "a", "a"],
    ]
    assert timed["a"].median_ms == pytest.approx(1.0)
    assert timed["b"].median_ms == pytest.approx(2.0)
    assert timed["a"].spread == pytest.approx(0.0)


def test_the_median_is_of_round_medians_and_the_spread_their_half_quartile_range() -> None:
    clock = FakeClock()
    # No untimed call: one call a round, rounds of 10, 11 and 8 ms.
    calls = {"a": clock.call("a", [10.0, 11.0, 8.0])}
    timed = interleaved(
        calls, rounds=3, per_round=1, settle_ms=0, warm=False, clock=clock, sleep=clock.sleep
    )
    assert timed["a"].rounds_ms == pytest.approx((10.0, 11.0, 8.0))
    assert timed["a"].median_ms == pytest.approx(10.0)
    # Quartiles 9 and 10.5 (inclusive method) around the median 10.
    assert timed["a"].spread == pytest.approx(0.075)
    assert not timed["a"].noisy
    # Within a round, the median of its calls: one slow call of three does not move it.
    clock = FakeClock()
    calls = {"a": clock.call("a", [5.0, 50.0, 5.0, 5.0])}
    timed = interleaved(
        calls, rounds=1, per_round=3, settle_ms=0, warm=False, clock=clock, sleep=clock.sleep
    )
    assert timed["a"].median_ms == pytest.approx(5.0)


def test_each_turn_settles_before_it_is_timed() -> None:
    """After an idle pause a core runs slowly for a while: 3 ms calls for the first 4 ms,
    then 1 ms ones. The untimed calls that open a turn take that time; without them, the
    slow calls decide the median."""
    clock = FakeClock()
    woke = [0.0]

    def pause(seconds: float) -> None:
        clock.sleep(seconds)
        woke[0] = clock.now

    def call() -> None:
        clock.now += (3.0 if clock.now - woke[0] < 0.004 else 1.0) / 1e3

    timing = {"rounds": 3, "per_round": 3, "clock": clock, "sleep": pause}
    assert interleaved({"a": call}, settle_ms=5, **timing)["a"].median_ms == pytest.approx(1.0)
    assert interleaved({"a": call}, settle_ms=0, **timing)["a"].median_ms == pytest.approx(3.0)


def test_a_ramp_longer_than_the_settle_time_is_waited_out() -> None:
    """The ramp of 2026-12-03 (a 0.95 ms call after a pause: 5.5, 2.8, 2.1, 1.6, 1.4, 1.1,
    then 1.0 ms) outlasts 10 ms: the turn keeps settling while each call is still a tenth
    faster than the one before, and times the steady calls."""
    clock = FakeClock()
    ramp = [5.5, 2.8, 2.1, 1.6, 1.4, 1.1, 1.0]
    call = clock.call("a", ramp)
    assert settle(call, 10.0, clock) == 7  # 1.0 after 1.1: no longer a tenth faster
    timed = interleaved(
        {"a": clock.call("a", ramp)},
        rounds=1,
        per_round=3,
        warm=False,
        settle_ms=10.0,
        clock=clock,
        sleep=clock.sleep,
    )
    assert timed["a"].median_ms == pytest.approx(1.0)


def test_settling_is_bounded() -> None:
    """A call that keeps speeding up settles for the cap at most; a call longer than the
    cap runs once; a steady call settles for ``settle_ms``."""
    clock = FakeClock()
    faster = [10 * 0.85**k for k in range(200)]  # 66 ms in all, each a tenth faster or more
    count = settle(clock.call("a", faster), 10.0, clock)
    assert SETTLE_CAP_MS <= clock.now * 1e3 < SETTLE_CAP_MS + 10.0  # + the call crossing it
    assert count < 20
    assert settle(clock.call("b", [2 * SETTLE_CAP_MS]), 10.0, clock) == 1
    assert settle(clock.call("c", [1.0]), 10.0, clock) == 10
    assert settle(clock.call("d", [1.0]), 0.5, clock) == 2  # 0.5 ms, then not faster


def test_a_spread_over_a_fifth_marks_the_cell() -> None:
    assert of_rounds([6.0, 10.0, 14.0, 18.0]).noisy  # quartiles 9 and 15, median 12
    assert not of_rounds([8.0, 10.0, 12.0, 14.0]).noisy  # 9.5 and 12.5, median 11
    # One round that met a neighbour's burst does not mark the cell; one round, no spread.
    assert of_rounds([10.0, 10.0, 100.0, 10.0, 10.0]).spread == 0.0
    assert of_rounds([3.0]).spread == 0.0
    assert cell(2.149, 0.081) == "2.15 ±8%"
    assert cell(2.0, 0.25) == "2.00 ±25%!"
    assert cell(2.0) == "2.00"


def test_rounds_and_calls_must_be_positive() -> None:
    with pytest.raises(ValueError, match="1 or more"):
        interleaved({}, rounds=0)


def test_the_table_shows_spreads_and_marks_a_noisy_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = [
        StandardRow("c", "add", "in-place", {"numba": 1.0, "torch": 2.0}, {"numba": 0.05}),
        StandardRow("c", "max", "in-place", {"numba": 1.0, "torch": 3.0}, {"torch": 0.3}),
    ]
    print_table(rows, ["numba", "torch"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == [
        "c",
        "add",
        "in-place",
        "1.00",
        "±5%",
        "2.00",
        "2.00x",
        "torch",
        "-",
    ]
    assert lines[2].split() == [
        "c",
        "max",
        "in-place",
        "1.00",
        "3.00",
        "±30%!",
        "3.00x",
        "torch!",
        "-",
    ]
    legend = " ".join(line.strip() for line in lines[-2:])
    assert legend.startswith("- ±: half the interquartile range of the round medians")
    assert legend.endswith("over 20%, the cell is not to be judged")


def test_the_record_says_how_it_was_measured_and_keeps_the_spreads() -> None:
    rows = [StandardRow("c", "add", "new", {"numba": 1.0}, {"numba": 0.05})]
    data = record(rows, ["numba"], ["bench"], (5, 3), ["torch"])
    assert data["statistic"].startswith("median of per-round medians, contestants interleaved")
    assert "in 5 rounds of 3 calls" in data["statistic"]
    assert data["rows"][0]["spreads"] == {"numba": 0.05}
