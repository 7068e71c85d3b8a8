"""One interval of serving as a row: the counters' increase, the gauges' peaks, the histograms'
new observations, the energy the serving GPUs drew. Built from two engine snapshots; a counter
that went down (or a new boot) means vLLM restarted, and the row counts from zero again."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rigctl.engine.metrics import EngineSnapshot, Histogram

COUNTED = ("preemptions", "prefix_queries", "prefix_hits", "prompt_tokens", "generation_tokens")
FINISHED = ("stop", "length", "abort", "error")
TIMED = ("ttft", "prefill", "tpot", "itl", "e2e", "queue")


@dataclass(frozen=True)
class Timing:
    """New observations of one latency histogram in an interval: cumulative bucket counts by
    upper bound (as Prometheus keeps them), their sum and count."""

    sum: float
    count: float
    buckets: tuple[tuple[float, float], ...]

    def to_json(self) -> list[object]:
        return [self.sum, self.count, [[le if math.isfinite(le) else "+Inf", n] for le, n in self.buckets]]

    @staticmethod
    def from_json(raw: list[Any]) -> Timing:
        total, count, buckets = raw
        return Timing(float(total), float(count),
                      tuple((math.inf if le == "+Inf" else float(le), float(n)) for le, n in buckets))


@dataclass(frozen=True)
class Row:
    ts: float  # the end of the interval (epoch seconds)
    seconds: float
    profile: str
    boot: str
    pool_tokens: int | None = None
    kv_usage_max: float | None = None  # fraction of the pool, the highest sampled
    kv_usage_seconds: float = 0.0  # usage x seconds (the mean is this / seconds)
    running_max: float | None = None
    waiting_max: float | None = None
    counts: dict[str, float] = field(default_factory=dict)  # COUNTED -> increase
    finished: dict[str, float] = field(default_factory=dict)  # finished_reason -> requests
    timings: dict[str, Timing] = field(default_factory=dict)
    energy_j: float | None = None  # the serving GPUs, this interval
    resolution: int = 10  # seconds a row stands for once downsampled (10 raw)

    @property
    def requests(self) -> float:
        return sum(self.finished.values())


def increase(before: float | None, after: float | None) -> float:
    """A counter's increase; after a reset (vLLM restarted) everything since the restart."""
    if after is None:
        return 0.0
    if before is None or after < before:
        return after
    return after - before


def _timing(before: Histogram | None, after: Histogram | None, restarted: bool) -> Timing | None:
    if after is None:
        return None
    if before is None or restarted or after.count < before.count:
        delta_count, delta_sum, base = after.count, after.sum, {}
    else:
        delta_count, delta_sum, base = after.count - before.count, after.sum - before.sum, dict(before.buckets)
    if delta_count <= 0:
        return None
    buckets = tuple((le, max(0.0, n - base.get(le, 0.0))) for le, n in after.buckets)
    return Timing(delta_sum, delta_count, buckets)


def restarted(before: EngineSnapshot, after: EngineSnapshot) -> bool:
    """vLLM started again between the two scrapes: its process start moved, or a counter fell."""
    if before.process_start and after.process_start and after.process_start > before.process_start + 1:
        return True
    return any((after.counters.get(k) or 0) < (before.counters.get(k) or 0) for k in COUNTED)


def interval(before: EngineSnapshot, after: EngineSnapshot, profile: str, boot: str, *, seconds: float,
             kv_usage_max: float | None, kv_usage_seconds: float, running_max: float | None,
             waiting_max: float | None, energy_j: float | None) -> Row:
    fresh = restarted(before, after)
    prior = None if fresh else before
    counts = {k: increase(prior.counters.get(k) if prior else None, after.counters.get(k)) for k in COUNTED}
    finished = {}
    for reason, value in after.finished_by_reason.items():
        gained = increase(prior.finished_by_reason.get(reason) if prior else None, value)
        if gained:
            finished[reason] = gained
    timings = {}
    for name in TIMED:
        timing = _timing(before.histograms.get(name), after.histograms.get(name), fresh)
        if timing is not None:
            timings[name] = timing
    return Row(after.timestamp, seconds, profile, boot, after.kv_pool_tokens, kv_usage_max, kv_usage_seconds,
               running_max, waiting_max, counts, finished, timings, energy_j)


def merge_timings(timings: Iterable[Timing]) -> Timing | None:
    """Observations of several intervals together (bucket bounds are the engine's, the same in each)."""
    total = count = 0.0
    buckets: dict[float, float] = {}
    for timing in timings:
        total += timing.sum
        count += timing.count
        for le, n in timing.buckets:
            buckets[le] = buckets.get(le, 0.0) + n
    return Timing(total, count, tuple(sorted(buckets.items()))) if count else None


def quantile(timing: Timing, q: float) -> float | None:
    """Prometheus's histogram_quantile: linear inside the bucket that holds the rank."""
    if not timing.count or not timing.buckets:
        return None
    rank = q * timing.buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for le, cumulative in timing.buckets:
        if cumulative >= rank:
            if math.isinf(le):
                return lower_bound  # the rank is in the +Inf bucket: the highest finite bound
            if cumulative == lower_count:
                return le
            return lower_bound + (le - lower_bound) * (rank - lower_count) / (cumulative - lower_count)
        lower_bound, lower_count = le, cumulative
    return lower_bound
