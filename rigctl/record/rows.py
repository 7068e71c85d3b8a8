"""One interval of serving as a row: the counters' increase, the gauges' peaks, the histograms'
new observations, the energy the serving GPUs drew. Built from two engine snapshots; a counter
that went down (or a new boot) means vLLM restarted, and the row counts from zero again."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rigctl.engine.derive import Estimate, counter_increases, engine_restarted, histogram_increase, quantile_estimate
from rigctl.engine.metrics import EngineSnapshot, Histogram

DOWNSAMPLED_S = 300

COUNTED_FIRST = ("preemptions", "prefix_queries", "prefix_hits", "prompt_tokens", "generation_tokens")
# vLLM 0.33's native KV offload and a KV connector's hits (record schema 2: columns at the table's end)
COUNTED_OFFLOAD = ("external_prefix_queries", "external_prefix_hits", "offload_store_bytes", "offload_load_bytes")
COUNTED = COUNTED_FIRST + COUNTED_OFFLOAD
FINISHED = ("stop", "length", "abort", "error")
TIMED = ("ttft", "prefill", "tpot", "itl", "e2e")  # itl kept only where tpot is not (vLLM before 0.11)
BENCH_TAG = "bench:"  # a boot a bench started: `bench:PLAN:KEY` (report keeps its rows apart from real use)


def bench_plan_of(boot: str) -> str | None:
    """The plan whose bench a row's boot was, or None for real use."""
    if not boot.startswith(BENCH_TAG):
        return None
    return boot[len(BENCH_TAG) :].rsplit(":", 1)[0]


@dataclass(slots=True)  # not frozen: a month of rows builds ~70,000 of these, and frozen init costs 3x
class Timing:
    """New observations of one latency histogram in an interval: their sum and count, and the
    buckets that gained any, as (lower bound, upper bound, observations). Only buckets with
    observations are kept (a 10 s interval fills a few of vLLM's ~20), and with both bounds each
    is self-describing, so quantiles interpolate exactly as Prometheus's histogram_quantile."""

    sum: float
    count: float
    buckets: Sequence[Sequence[Any]]  # (lower, upper, observations); upper may be math.inf or "+Inf" as stored

    def to_json(self) -> list[Any]:
        return [round(self.sum, 6), self.count, [[lo, _stored(hi), n] for lo, hi, n in self.buckets]]

    @staticmethod
    def from_json(raw: list[Any]) -> Timing:
        # kept as stored ("+Inf" included): a month of rows is read in one go, and converting every
        # bucket cost more than the rest of the report (benchmarks/bench_record.py)
        return Timing(raw[0], raw[1], raw[2])


def _stored(bound: Any) -> Any:
    return "+Inf" if bound == "+Inf" or (isinstance(bound, float) and math.isinf(bound)) else bound


def _upper(bound: Any) -> float:
    return math.inf if bound == "+Inf" else float(bound)


@dataclass(slots=True)  # as Timing: treated as immutable, not frozen for the cost of building many
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
    """The interval's observations (the dashboard's rule: engine/derive.py histogram_increase),
    kept as the buckets that gained: (lower edge, upper edge, observations)."""
    buckets, delta_count, delta_sum = histogram_increase(before, after, restarted)
    if delta_count <= 0:
        return None
    kept, lower, below = [], 0.0, 0.0
    for le, cumulative in buckets:
        if cumulative - below > 0:
            kept.append((lower, le, cumulative - below))
        lower, below = le, max(below, cumulative)
    return Timing(delta_sum, delta_count, tuple(kept))


def restarted(before: EngineSnapshot, after: EngineSnapshot) -> bool:
    """vLLM started again between the two scrapes: the dashboard's rule (engine/derive.py)."""
    return engine_restarted(before, after)


def interval(
    before: EngineSnapshot,
    after: EngineSnapshot,
    profile: str,
    boot: str,
    *,
    seconds: float,
    kv_usage_max: float | None,
    kv_usage_seconds: float,
    running_max: float | None,
    waiting_max: float | None,
    energy_j: float | None,
) -> Row:
    fresh = restarted(before, after)
    prior = None if fresh else before
    known = counter_increases(before, after, fresh)  # the dashboard's rule: an unknown increase is not counted
    counts = {k: value for k in COUNTED if (value := known.get(k)) is not None}
    finished = {}
    for reason, value in after.finished_by_reason.items():
        gained = increase(prior.finished_by_reason.get(reason) if prior else None, value)
        if gained:
            finished[reason] = gained
    timings = {}
    for name in TIMED:
        if name == "itl" and "tpot" in after.histograms:
            continue
        timing = _timing(before.histograms.get(name), after.histograms.get(name), fresh)
        if timing is not None:
            timings[name] = timing
    return Row(
        after.timestamp,
        seconds,
        profile,
        boot,
        after.kv_pool_tokens,
        kv_usage_max,
        kv_usage_seconds,
        running_max,
        waiting_max,
        counts,
        finished,
        timings,
        energy_j,
    )


def merge_timings(timings: Iterable[Timing]) -> Timing | None:
    """Observations of several intervals together (the engine's bucket bounds are the same in each)."""
    total = count = 0.0
    buckets: dict[tuple[Any, Any], float] = {}
    for timing in timings:
        total += timing.sum
        count += timing.count
        for lo, hi, n in timing.buckets:
            key = (lo, _stored(hi))
            buckets[key] = buckets.get(key, 0.0) + n
    if not count:
        return None
    ordered = sorted(buckets.items(), key=lambda item: _upper(item[0][1]))
    return Timing(total, count, tuple((lo, _upper(hi), n) for (lo, hi), n in ordered))


def quantile(timing: Timing, q: float) -> Estimate | None:
    """The q-quantile of the recorded observations by the dashboard's rule (engine/derive.py
    quantile_estimate, one primitive for both): linear inside the bucket that holds the rank
    (Prometheus' histogram_quantile), `<` its edge in the engine's first bucket, `>` the last
    finite edge in +Inf."""
    ordered = sorted(timing.buckets, key=lambda b: _upper(b[1]))
    if not ordered or not sum(n for _, _, n in ordered):
        return None
    # back to cumulative (le, count) buckets: each kept bucket's lower edge restored where an empty
    # bucket (not kept) ended below it, so +Inf's bound is the last finite edge, as the engine has it
    cumulative: list[tuple[float, float]] = []
    seen = 0.0
    for lo, stored, n in ordered:
        lower = float(lo)
        if lower > 0 and (not cumulative or cumulative[-1][0] < lower):
            cumulative.append((lower, seen))
        seen += n
        cumulative.append((_upper(stored), seen))
    return quantile_estimate(q, tuple(cumulative))


def downsample(rows: list[Row]) -> Row:
    """Several intervals of one profile and boot as one row: increases and energy summed, peaks kept."""
    last = rows[-1]

    def peak(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return max(known) if known else None

    finished: dict[str, float] = defaultdict(float)
    for row in rows:
        for reason, n in row.finished.items():
            finished[reason] += n
    timings = {}
    for name in {n for row in rows for n in row.timings}:
        merged = merge_timings(row.timings[name] for row in rows if name in row.timings)
        if merged is not None:
            timings[name] = merged
    energy = [r.energy_j for r in rows if r.energy_j is not None]
    return Row(
        last.ts,
        sum(r.seconds for r in rows),
        last.profile,
        last.boot,
        int(peak([r.pool_tokens for r in rows]) or 0) or None,
        peak([r.kv_usage_max for r in rows]),
        sum(r.kv_usage_seconds for r in rows),
        peak([r.running_max for r in rows]),
        peak([r.waiting_max for r in rows]),
        {k: sum(r.counts.get(k, 0.0) for r in rows) for k in COUNTED},
        dict(finished),
        timings,
        sum(energy) if energy else None,
        DOWNSAMPLED_S,
    )
