"""The same interval, one answer: for any pair of scrapes (an engine restarted between them or not,
by its process start or by a counter that fell), the dashboard's figures (engine/derive.py) and
the record's row (record/rows.py) agree on the hit rate, the tokens and the preemptions."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from rigctl.engine.derive import interval as dashboard
from rigctl.engine.metrics import EngineSnapshot
from rigctl.record.rows import interval as record

COUNTS = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)
STARTS = st.one_of(st.none(), st.sampled_from([10.0, 10.5, 120.0]))


@st.composite
def scrapes(draw: st.DrawFn) -> tuple[EngineSnapshot, EngineSnapshot]:
    def snap(t: float) -> EngineSnapshot:
        queries = draw(COUNTS)
        hits = draw(st.floats(min_value=0, max_value=queries)) if queries else 0.0
        counters = {"prefix_queries": queries, "prefix_hits": hits, "generation_tokens": draw(COUNTS), "preemptions": draw(COUNTS)}
        return EngineSnapshot(t, counters=counters, process_start=draw(STARTS), vllm=True)

    return snap(100.0), snap(160.0)


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
    queries, hits = row.counts["prefix_queries"], row.counts["prefix_hits"]
    assert close(figures.hit_rate, hits / queries if queries > 0 else None), (figures.hit_rate, hits, queries)
    assert close((figures.generation_tps or 0.0) * 60.0, row.counts["generation_tokens"])
    assert close(figures.preemptions or 0.0, row.counts["preemptions"])


def test_the_issues_case_a_restart_by_process_start() -> None:
    """Process start 10 -> 120; before 1,000 queries / 500 hits / 100 tokens, after 4,000 / 3,000 /
    2,000: both say 75.0% and 33.3 tok/s (the dashboard said 83.3% and 31.7 before one rule)."""
    before = EngineSnapshot(0.0, counters={"prefix_queries": 1000, "prefix_hits": 500, "generation_tokens": 100}, process_start=10)
    after = EngineSnapshot(
        60.0, counters={"prefix_queries": 4000, "prefix_hits": 3000, "generation_tokens": 2000}, process_start=120
    )
    figures = dashboard(before, after)
    assert figures.restarted and figures.hit_rate == 0.75 and round(figures.generation_tps or 0, 1) == 33.3
