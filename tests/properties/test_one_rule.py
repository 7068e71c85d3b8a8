"""The same interval, one answer: for any pair of scrapes (an engine restarted between them or not,
by its process start or by a counter that fell, an earlier scrape with no counters at all), the
dashboard's figures (engine/derive.py) and the record's row (record/rows.py) agree on the hit
rate, the tokens and the preemptions, and on each latency quantile, its bound included (`<` in
the first bucket, `>` in +Inf): one set of counter and quantile primitives for both."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from rigctl.engine.derive import interval as dashboard
from rigctl.engine.metrics import EngineSnapshot, Histogram
from rigctl.record.rows import interval as record
from rigctl.record.rows import quantile

COUNTS = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)
STARTS = st.one_of(st.none(), st.sampled_from([10.0, 10.5, 120.0]))


EDGES = (0.3, 0.5, 1.0, 2.5, math.inf)  # vLLM's coarse first edges, and +Inf


@st.composite
def histogram(draw: st.DrawFn, floor: Histogram | None = None) -> Histogram:
    """Cumulative buckets over EDGES: `floor`'s (the same engine, earlier) plus new observations,
    themselves cumulative (a bucket's new count is at least the one below it)."""
    counts, new = [], 0.0
    for i, _ in enumerate(EDGES):
        new += draw(st.sampled_from([0.0, 0.0, 1.0, 3.0, 40.0]))
        counts.append((floor.buckets[i][1] if floor else 0.0) + new)
    return Histogram(tuple(zip(EDGES, counts, strict=True)), sum=counts[-1], count=counts[-1])


@st.composite
def scrapes(draw: st.DrawFn) -> tuple[EngineSnapshot, EngineSnapshot]:
    def snap(t: float, empty: bool = False, floor: Histogram | None = None) -> EngineSnapshot:
        if empty:  # a scrape that held no counter at all (the engine not yet up, a failed read)
            return EngineSnapshot(t, counters={}, process_start=draw(STARTS), vllm=True)
        queries = draw(COUNTS)
        hits = draw(st.floats(min_value=0, max_value=queries)) if queries else 0.0
        counters = {"prefix_queries": queries, "prefix_hits": hits, "generation_tokens": draw(COUNTS), "preemptions": draw(COUNTS)}
        ttft = draw(histogram(floor))
        return EngineSnapshot(t, counters=counters, process_start=draw(STARTS), vllm=True, histograms={"ttft": ttft})

    first = snap(100.0, empty=draw(st.booleans()) and draw(st.booleans()))
    return first, snap(160.0, floor=first.histograms.get("ttft") if draw(st.booleans()) else None)


def close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


@settings(max_examples=300, deadline=None)
@given(scrapes())
def test_the_dashboard_and_the_record_agree_on_every_pair_of_scrapes(pair: tuple[EngineSnapshot, EngineSnapshot]) -> None:
    before, after = pair
    figures = dashboard(before, after, seconds=60.0)
    row = record(
        before,
        after,
        "p",
        "boot",
        seconds=60.0,
        kv_usage_max=None,
        kv_usage_seconds=0.0,
        running_max=None,
        waiting_max=None,
        energy_j=None,
    )
    queries, hits = row.counts.get("prefix_queries"), row.counts.get("prefix_hits")
    # an increase nobody can know (no counter in the earlier scrape) is neither said nor recorded
    assert close(figures.hit_rate, hits / queries if queries and hits is not None else None), (figures.hit_rate, hits, queries)
    tokens = row.counts.get("generation_tokens")
    assert close(None if figures.generation_tps is None else figures.generation_tps * 60.0, tokens)
    assert close(figures.preemptions, row.counts.get("preemptions"))
    shown, kept = figures.latency.get("ttft"), row.timings.get("ttft")
    for q, estimate in ((0.5, shown.p50 if shown else None), (0.95, shown.p95 if shown else None)):
        recorded = quantile(kept, q) if kept else None
        assert (estimate is None) == (recorded is None), (q, estimate, recorded)
        if estimate is not None and recorded is not None:
            assert estimate.relation == recorded.relation and close(estimate.value, recorded.value), (q, estimate, recorded)


def test_the_issues_case_a_restart_by_process_start() -> None:
    """Process start 10 -> 120; before 1,000 queries / 500 hits / 100 tokens, after 4,000 / 3,000 /
    2,000: both say 75.0% and 33.3 tok/s (the dashboard said 83.3% and 31.7 before one rule)."""
    before = EngineSnapshot(0.0, counters={"prefix_queries": 1000, "prefix_hits": 500, "generation_tokens": 100}, process_start=10)
    after = EngineSnapshot(
        60.0, counters={"prefix_queries": 4000, "prefix_hits": 3000, "generation_tokens": 2000}, process_start=120
    )
    figures = dashboard(before, after)
    assert figures.restarted and figures.hit_rate == 0.75 and round(figures.generation_tps or 0, 1) == 33.3
