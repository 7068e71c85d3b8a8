"""The engine's conditions, judged from a sequence of scrapes: what fires, when, and that it clears.
The scrapes are EngineSnapshots as rigctl's parser builds them from vLLM's /metrics."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rigctl.alerts.evaluator import AlertEvaluator
from rigctl.alerts.limits import AlertLimits
from rigctl.engine.metrics import EngineSnapshot, Histogram

T0 = 1_800_000_000.0


def scrape(
    t: float,
    waiting: float = 0.0,
    tokens: float | None = 0.0,
    queue: tuple[float, float] = (0.0, 0.0),
    preemptions: float = 0.0,
    kv: float = 0.1,
    engine: float = T0 - 100,
) -> EngineSnapshot:
    """One /metrics read at T0 + t; `tokens` None: a gauge-only read (no counters)."""
    counters = {} if tokens is None else {"generation_tokens": tokens, "prompt_tokens": 0.0, "preemptions": preemptions}
    histograms = {} if tokens is None else {"queue": Histogram(((float("inf"), queue[1]),), queue[0], queue[1])}
    return EngineSnapshot(
        T0 + t, waiting=waiting, running=1.0, kv_usage=kv, counters=counters, histograms=histograms, process_start=engine, vllm=True
    )


def states(evaluator: AlertEvaluator, snap: EngineSnapshot) -> list[tuple[str, str]]:
    return [(c.alert.key, c.state) for c in evaluator.on_engine(snap, snap.timestamp)]


def test_a_stall_fires_after_stall_s_of_waiting_without_a_token_and_clears_when_tokens_flow() -> None:
    ev = AlertEvaluator(AlertLimits(stall_s=60))
    assert states(ev, scrape(0, waiting=0, tokens=100)) == []
    assert states(ev, scrape(10, waiting=3, tokens=100)) == []  # requests wait: the clock starts
    assert states(ev, scrape(40, waiting=3, tokens=None)) == []  # a gauge-only read between full ones
    assert states(ev, scrape(69, waiting=3, tokens=100)) == []  # 59 s
    assert states(ev, scrape(71, waiting=3, tokens=100)) == [("stall", "fired")]
    assert "3 request(s) waiting and no token produced for 61 s" in ev.firing["stall"].text
    assert states(ev, scrape(80, waiting=3, tokens=100)) == []  # said once
    assert states(ev, scrape(90, waiting=3, tokens=150)) == [("stall", "cleared")]


def test_a_busy_engine_with_a_queue_that_moves_never_stalls() -> None:
    ev = AlertEvaluator(AlertLimits(stall_s=60))
    for i in range(60):
        assert states(ev, scrape(i * 5, waiting=8, tokens=1000.0 * i)) == []


def test_waiting_that_starts_after_tokens_last_moved_is_timed_from_the_waiting() -> None:
    ev = AlertEvaluator(AlertLimits(stall_s=60))
    states(ev, scrape(0, waiting=0, tokens=100))
    assert states(ev, scrape(500, waiting=1, tokens=100)) == []  # idle for minutes, then a request comes
    assert states(ev, scrape(559, waiting=1, tokens=100)) == []
    assert states(ev, scrape(561, waiting=1, tokens=100)) == [("stall", "fired")]


def test_queue_time_is_the_mean_over_the_window() -> None:
    ev = AlertEvaluator(AlertLimits(queue_s=30, window_s=60))
    assert states(ev, scrape(0, tokens=0, queue=(0, 0))) == []
    assert states(ev, scrape(30, tokens=10, queue=(50, 10))) == []  # 10 requests, 5 s each
    assert states(ev, scrape(60, tokens=20, queue=(450, 20))) == []  # then 10 at 40 s: 450 s / 20 = 22.5 s
    assert states(ev, scrape(90, tokens=30, queue=(850, 30))) == [("queue", "fired")]  # the fast ones left the window
    assert "40.0 s on average" in ev.firing["queue"].text and "20 requests" in ev.firing["queue"].text


def test_queue_time_fires_and_clears() -> None:
    ev = AlertEvaluator(AlertLimits(queue_s=30, window_s=60))
    states(ev, scrape(0, tokens=0, queue=(0, 0)))
    assert states(ev, scrape(20, tokens=10, queue=(200, 5))) == [("queue", "fired")]  # 40 s a request
    assert states(ev, scrape(40, tokens=20, queue=(400, 10))) == []
    assert "40.0 s on average" in ev.firing["queue"].text
    # the window slides past the slow requests: fast ones only
    assert states(ev, scrape(100, tokens=30, queue=(401, 20))) == [("queue", "cleared")]  # 1 s for 10 since t=40


def test_a_preemption_storm_is_a_rate_over_the_whole_window() -> None:
    ev = AlertEvaluator(AlertLimits(preemptions_per_min=30, window_s=60))
    states(ev, scrape(0, tokens=0, preemptions=0))
    assert states(ev, scrape(5, tokens=1, preemptions=20)) == []  # 20 in 5 s is 20 over the window: not yet 30
    assert states(ev, scrape(20, tokens=2, preemptions=31)) == [("preemptions", "fired")]
    for t in range(30, 200, 10):
        states(ev, scrape(t, tokens=t, preemptions=31))
    assert "preemptions" not in ev.firing


def test_kv_full_needs_requests_waiting_and_time() -> None:
    ev = AlertEvaluator(AlertLimits(kv_full_s=120))
    assert states(ev, scrape(0, kv=1.0, waiting=0, tokens=1)) == []  # full and nobody waits: a well-used pool
    assert states(ev, scrape(10, kv=1.0, waiting=2, tokens=2)) == []
    assert states(ev, scrape(129, kv=1.0, waiting=2, tokens=3)) == []
    assert states(ev, scrape(131, kv=1.0, waiting=2, tokens=4)) == [("kv-full", "fired")]
    assert states(ev, scrape(140, kv=0.5, waiting=0, tokens=5)) == [("kv-full", "cleared")]


def test_a_new_engine_starts_afresh_and_clears_what_the_old_one_fired() -> None:
    ev = AlertEvaluator(AlertLimits(stall_s=10))
    states(ev, scrape(0, waiting=2, tokens=5))
    assert states(ev, scrape(11, waiting=2, tokens=5)) == [("stall", "fired")]
    assert ev.on_regression("the hit rate fell", T0 + 12)[0].state == "fired"
    fresh = states(ev, scrape(20, waiting=0, tokens=0, engine=T0 + 15))
    assert sorted(fresh) == [("hit-rate", "cleared"), ("stall", "cleared")]


def test_a_scrape_that_is_not_vllm_changes_nothing() -> None:
    ev = AlertEvaluator(AlertLimits(stall_s=1))
    assert ev.on_engine(EngineSnapshot(T0, waiting=5), T0) == [] and ev.on_engine(None, T0 + 50) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 30), st.integers(0, 4), st.booleans(), st.floats(0, 1)), min_size=1, max_size=60))
def test_every_change_alternates_fired_then_cleared_and_firing_says_what_fired(
    steps: list[tuple[float, int, bool, float]],
) -> None:
    """Whatever the scrapes, a key's changes alternate fired, cleared, fired...; `firing` holds
    exactly the keys whose last change was fired."""
    ev = AlertEvaluator(AlertLimits(stall_s=20, kv_full_s=20, queue_s=1, window_s=30, preemptions_per_min=5))
    t, tokens, queued, preempted = 0.0, 0.0, 0.0, 0.0
    last: dict[str, str] = {}
    for gap, waiting, moved, kv in steps:
        t += gap
        tokens += 10 if moved else 0
        queued += waiting
        preempted += waiting // 2
        for change in ev.on_engine(scrape(t, waiting, tokens, (queued * 2, queued), preempted, kv), T0 + t):
            assert last.get(change.alert.key, "cleared") != change.state
            last[change.alert.key] = change.state
    assert set(ev.firing) == {k for k, state in last.items() if state == "fired"}
