"""The record's pure derivations on recorded series: deltas across a restart, peak resident
context from usage x pool, hit rates over windows, the regression rule with and without enough
traffic, quantiles as Prometheus computes them, and downsampling that keeps every count."""

from __future__ import annotations

import math

import pytest

from rigctl.engine.derive import Estimate
from rigctl.engine.metrics import EngineSnapshot, Histogram
from rigctl.record.derive import Thresholds, by_boot, by_profile, current_regression, figures, regressions
from rigctl.record.reader import RecordReader
from rigctl.record.rows import Row, Timing, downsample, increase, interval, merge_timings, quantile
from rigctl.record.store import RecorderBusy, RecordWriter

BUCKETS = (0.1, 0.5, 1.0, math.inf)


def snap(
    t: float,
    queries: float,
    hits: float,
    *,
    start: float = 1000.0,
    ttft: tuple[float, ...] = (),
    usage: float = 0.0,
    pool: int = 100_000,
    finished: float = 0.0,
) -> EngineSnapshot:
    cumulative = tuple((le, float(sum(1 for x in ttft if x <= le))) for le in BUCKETS)
    return EngineSnapshot(
        t,
        counters={"prefix_queries": queries, "prefix_hits": hits, "generation_tokens": queries},
        histograms={"ttft": Histogram(cumulative, sum(ttft), float(len(ttft)))} if ttft else {},
        finished_by_reason={"stop": finished} if finished else {},
        kv_usage=usage,
        kv_pool_tokens=pool,
        process_start=start,
    )


def row(
    t: float,
    profile: str,
    boot: str,
    queries: float,
    hits: float,
    *,
    usage: float | None = None,
    pool: int = 100_000,
    requests: float = 0.0,
    seconds: float = 10.0,
    energy: float | None = None,
) -> Row:
    return Row(
        t,
        seconds,
        profile,
        boot,
        pool,
        usage,
        (usage or 0) * seconds,
        None,
        None,
        {"prefix_queries": queries, "prefix_hits": hits, "generation_tokens": queries},
        {"stop": requests} if requests else {},
        {},
        energy,
    )


def test_an_interval_counts_the_increase_and_a_restart_counts_from_zero() -> None:
    a = snap(10, 1000, 600, ttft=(0.05, 0.3), finished=2)
    b = snap(20, 1500, 900, ttft=(0.05, 0.3, 0.7), finished=3)
    r = interval(a, b, "p", "boot1", seconds=10, kv_usage_max=0.4, kv_usage_seconds=3.0, running_max=2, waiting_max=0, energy_j=900)
    assert r.counts["prefix_queries"] == 500 and r.counts["prefix_hits"] == 300 and r.finished == {"stop": 1}
    assert r.timings["ttft"].count == 1 and r.timings["ttft"].buckets == ((0.5, 1.0, 1.0),)  # only what gained
    # vLLM restarted between the scrapes: its counters start again from zero
    c = snap(30, 200, 50, start=1025.0, ttft=(0.2,), finished=1)
    r2 = interval(
        b, c, "p", "boot2", seconds=10, kv_usage_max=None, kv_usage_seconds=0, running_max=None, waiting_max=None, energy_j=None
    )
    assert r2.counts["prefix_queries"] == 200 and r2.counts["prefix_hits"] == 50 and r2.finished == {"stop": 1}
    assert r2.timings["ttft"].count == 1
    assert increase(5.0, 3.0) == 3.0 and increase(None, 4.0) == 4.0 and increase(2.0, None) == 0.0


def test_peak_resident_context_is_the_highest_usage_times_the_pool() -> None:
    rows = [row(10, "a", "b1", 100, 90, usage=0.2), row(20, "a", "b1", 100, 90, usage=0.76), row(30, "a", "b1", 100, 90, usage=0.5)]
    f = figures(rows, "a")
    assert f.pool_tokens == 100_000 and f.peak_resident_tokens == 76_000 and f.peak_resident_share == 0.76


def test_hit_rates_over_everything_and_after_each_boots_warm_up() -> None:
    rows = [row(10 * i, "a", "b1", 1000, 0 if i < 3 else 950) for i in range(1, 10)]  # a cold start, then warm
    f = figures(rows, "a", Thresholds(warmup_s=25, min_prefix_queries=1000))
    assert f.prefix_hit_rate == pytest.approx(7 * 950 / 9000)
    assert f.prefix_hit_rate_warm == pytest.approx(0.95)  # rows after the first 25 s of traffic
    assert figures([row(10, "a", "b1", 0, 0)], "a").cold_cache is True


def test_a_switch_that_collapses_the_hit_rate_is_a_regression_once_traffic_is_comparable() -> None:
    limits = Thresholds(warmup_s=0, min_prefix_queries=5000, regression_points=0.10)
    before = [row(10 * i, "a", "b1", 1000, 970) for i in range(1, 11)]
    early = [row(200 + 10 * i, "b", "b2", 1000, 300) for i in range(1, 4)]  # 3,000 tokens: too little to say
    assert regressions(before + early, limits) == []
    later = early + [row(240 + 10 * i, "b", "b2", 1000, 300) for i in range(1, 4)]
    (found,) = regressions(before + later, limits)
    assert (found.previous, found.current, found.current_boot) == ("a", "b", "b2")
    assert found.previous_rate == pytest.approx(0.97) and found.current_rate == pytest.approx(0.3)
    assert found.describe().startswith("prefix hit rate fell from 97.0% (a) to 30.0% (b) since the switch")
    assert current_regression(before + later, "b2", limits) == found
    # a small fall is not a regression; a restart of the same profile is not a switch
    mild = [row(200 + 10 * i, "b", "b3", 1000, 900) for i in range(1, 8)]
    same = [row(200 + 10 * i, "a", "b4", 1000, 100) for i in range(1, 8)]
    assert regressions(before + mild, limits) == [] and regressions(before + same, limits) == []
    flagged = by_profile(before + later, limits=limits)
    assert flagged[0].regression is None and flagged[1].regression == found
    assert [c.boots for c in by_boot(before + later, limits)] == [("b1",), ("b2",)]


def test_quantiles_are_prometheus_histogram_quantile() -> None:
    timing = Timing(0, 10, ((0.0, 0.1, 2.0), (0.1, 0.5, 4.0), (0.5, 1.0, 3.0), (1.0, math.inf, 1.0)))
    middle = quantile(timing, 0.5)  # rank 5 in (0.1, 0.5]
    assert middle is not None and middle.relation == "~" and middle.value == pytest.approx(0.1 + 0.4 * (5 - 2) / 4)
    assert quantile(timing, 0.95) == Estimate(1.0, ">")  # in +Inf: only above the highest finite bound
    assert quantile(timing, 0.1) == Estimate(0.1, "<")  # in the engine's first bucket: only below its edge
    merged = merge_timings([timing, timing])
    assert merged is not None and merged.count == 20 and merged.buckets[1] == (0.1, 0.5, 8.0)
    assert quantile(merged, 0.5) == quantile(timing, 0.5)


def test_energy_becomes_mean_power_and_joules_per_token_over_metered_rows_only() -> None:
    rows = [
        row(10, "a", "b1", 100, 0, energy=3000),
        row(20, "a", "b1", 100, 0, energy=2000),
        row(30, "a", "b1", 100, 0, energy=None),
    ]
    f = figures(rows, "a")
    assert f.mean_power_w == pytest.approx(250.0) and f.j_per_token == pytest.approx(25.0)


def test_too_little_traffic_is_marked() -> None:
    f = figures([row(10, "a", "b1", 10, 5, requests=3)], "a")
    assert {"requests", "ttft_mean_s", "prefix_hit_rate"} <= set(f.low_traffic)
    busy = figures([row(10 * i, "a", "b1", 10_000, 5000, requests=5) for i in range(1, 40)], "a")
    assert "requests" not in busy.low_traffic and "prefix_hit_rate" not in busy.low_traffic


def test_downsampling_and_retention_keep_counts_and_drop_old_rows(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "record.sqlite"
    writer = RecordWriter(path)
    now = 1_800_000_000.0
    old = [
        row(now - 2 * 86400 + 10 * i, "a", "b1", 100, 60, usage=0.1 * (i % 5), requests=1, energy=10) for i in range(60)
    ]  # 10 minutes, two days ago
    ancient = [row(now - 40 * 86400, "a", "b0", 100, 60)]
    fresh = [row(now - 60, "a", "b2", 100, 60)]
    for r in ancient + old + fresh:
        writer.add(r)
    downsampled, dropped = writer.compact(now)
    assert (downsampled, dropped) == (60, 1)
    with pytest.raises(RecorderBusy, match="another recorder"):
        RecordWriter(path)
    writer.close()
    rows = RecordReader(path).rows()
    assert [r.resolution for r in rows] == [300, 300, 10]  # two 5-minute rows, the fresh one kept raw
    kept = [r for r in rows if r.boot == "b1"]
    assert sum(r.counts["prefix_queries"] for r in kept) == 6000 and sum(r.requests for r in kept) == 60
    assert sum(r.energy_j or 0 for r in kept) == 600 and max(r.kv_usage_max or 0 for r in kept) == pytest.approx(0.4)
    assert downsample(old).seconds == 600


def test_a_switch_is_judged_on_two_boots_rows_not_the_whole_record(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import time

    path = tmp_path / "record.sqlite"
    writer = RecordWriter(path)
    now = time.time()
    for i, (profile, boot) in enumerate([("a", "b0"), ("a", "b1"), ("b", "b2")]):
        for k in range(3):
            writer.add(row(now - 3000 + 1000 * i + 10 * k, profile, boot, 1000, 900 if profile == "a" else 100))
    writer.close()
    reader = RecordReader(path)
    assert [r.boot for r in reader.switch_rows("b2")] == ["b1"] * 3 + ["b2"] * 3
    assert reader.switch_rows("nope") == [] and [r.boot for r in reader.switch_rows("b0")] == ["b0"] * 3
    limits = Thresholds(warmup_s=0, min_prefix_queries=1000)
    assert current_regression(reader.switch_rows("b2"), "b2", limits) == current_regression(reader.rows(), "b2", limits)
