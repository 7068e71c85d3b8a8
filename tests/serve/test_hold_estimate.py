"""What the owner is told the apps will wait, before a switch: each stream's end from its pace so
far, bounded by the drain's deadline; what cannot be known counts at the deadline; the boot from
the target's last boots."""

from __future__ import annotations

from rigctl.serve.hold_estimate import Flight, HoldEstimate, flights_of
from rigctl.state.boots import BootEstimate

NINE_S = BootEstimate(9.0, 3)


def stream(events: int, answering_s: float, max_tokens: int | None, client: str = "openai-python/1.0") -> Flight:
    return Flight(client, True, events, answering_s, max_tokens)


def test_a_stream_ends_at_its_pace_so_far_and_the_longest_decides() -> None:
    # 300 of 4,096 tokens in 10 s (30 tok/s): 126.5 s left; 1,000 of 1,200 in 20 s: 4 s left
    estimate = HoldEstimate("alt", True, (stream(300, 10.0, 4096), stream(1000, 20.0, 1200)), 2, 300.0, NINE_S)
    assert round(estimate.drain_estimate_s(), 1) == 126.5
    assert round(estimate.seconds() or 0, 1) == 135.5
    first, cut = estimate.lines()
    assert first.startswith("the apps will wait ~2.3 min: 2 stream(s) through the front door end in ~2.1 min")
    assert "the longest: openai-python/1.0 at 300 of 4,096 tokens, 30 tok/s" in first
    assert "then the boot (~9.0 s, its last 3 boots' median)" in first
    assert cut.startswith("cutting them now instead (--drain 0; Cut in the TUI): the apps wait the boot (~9.0 s")


def test_the_drain_deadline_bounds_the_estimate() -> None:
    estimate = HoldEstimate("alt", True, (stream(10, 10.0, 100_000),), 1, 120.0, NINE_S)
    assert estimate.drain_estimate_s() == 120.0


def test_what_cannot_be_known_counts_at_the_deadline() -> None:
    unstreamed = Flight("agent/2", False, 0, None, 512)
    no_limit = stream(50, 5.0, None)
    for flights, running in (((unstreamed,), 1), ((no_limit,), 1), ((stream(50, 5.0, 60),), 3)):  # the last: 2 bypass the door
        estimate = HoldEstimate("alt", True, flights, running, 120.0, NINE_S)
        assert estimate.drain_estimate_s() == 120.0, flights
        assert "whose end cannot be known" in estimate.lines()[0]


def test_without_a_door_or_a_recorded_boot_it_says_what_it_cannot_know() -> None:
    no_door = HoldEstimate("alt", False, (), 2, 120.0, None)
    (line,) = no_door.lines()
    assert "2 request(s) running (vLLM's gauges): the switch waits up to 120 s" in line
    assert "the apps are refused for the boot (no boot of alt recorded yet: no estimate)" in line
    assert no_door.seconds() is None
    idle = HoldEstimate("alt", True, (), 0, 120.0, NINE_S)
    assert idle.lines() == ["no request running: the apps wait the boot (~9.0 s, its last 3 boots' median)"]
    assert idle.seconds() == 9.0


def test_the_doors_detail_is_read_defensively() -> None:
    assert flights_of(None) == () and flights_of("x") == ()
    (flight,) = flights_of([{"client": "a", "streamed": True, "events": 5, "answering_s": 1.5, "max_tokens": 20}, 7])
    assert flight == Flight("a", True, 5, 1.5, 20)
