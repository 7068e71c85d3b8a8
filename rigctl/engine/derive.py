"""Interval figures from two EngineSnapshots (pure functions, easy to check by hand).

Rates and hit rates from counter deltas; TTFT, ITL, TPOT quantiles from histogram bucket
deltas with Prometheus' histogram_quantile semantics (linear inside the bucket); spec-decode
acceptance as vLLM defines it. A counter that went down means vLLM restarted: the
interval says so and counts the value after the restart as the increase, as Prometheus'
rate() does; a rate is never negative.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Literal

from rigctl.engine.metrics import EngineSnapshot, Histogram
from rigctl.gpu.model import GpuSample


@dataclass(frozen=True)
class Estimate:
    """A quantile as far as the buckets know it: `~` inside a bucket (linear, as Prometheus'
    histogram_quantile), `<` below the first bucket's edge (vLLM's first edges are coarse:
    0.3 s for queue time, so inventing 0.15 s there would be a lie), `>` beyond the last
    finite edge."""

    value: float
    relation: Literal["~", "<", ">"] = "~"


@dataclass(frozen=True)
class Quantiles:
    p50: Estimate | None
    p95: Estimate | None
    count: float


@dataclass(frozen=True)
class IntervalFigures:
    seconds: float
    restarted: bool
    prompt_tps: float | None = None
    generation_tps: float | None = None
    prefill_compute_tps: float | None = None  # prompt tokens actually computed (source local_compute)
    hit_rate: float | None = None  # prefix cache, over the interval
    hit_rate_lifetime: float | None = None
    preemptions: float | None = None
    latency: dict[str, Quantiles] = field(default_factory=dict)  # ttft, itl, tpot, e2e, queue
    latency_seconds: float | None = None  # the window the quantiles are over (None: this interval)
    decoding: bool = False  # tokens were generated in the interval: latency "idle" would be wrong
    acceptance_rate: float | None = None  # accepted / draft tokens
    mean_acceptance_length: float | None = None  # 1 + accepted / drafts
    acceptance_per_position: tuple[float, ...] = ()
    finished: dict[str, float] = field(default_factory=dict)
    power_w: float | None = None  # mean over the interval, GPUs serving the model
    joules_per_token: float | None = None
    external_hit_rate: float | None = None  # a KV connector's or the host-RAM offload's hits, over the interval
    offload_store_bps: float | None = None  # bytes a second stored to the KV offload (host RAM)
    offload_load_bps: float | None = None  # bytes a second loaded back from it


def _delta(before: float | None, after: float | None) -> tuple[float | None, bool]:
    """(increase, reset?) of a counter: after a reset the new value is the increase."""
    if before is None or after is None:
        return None, False
    if after < before:
        return after, True
    return after - before, False


def counter_increases(before: EngineSnapshot, after: EngineSnapshot, restarted: bool) -> dict[str, float | None]:
    """Each counter's increase over an interval: the one rule the dashboard (interval below) and
    the record (record/rows.py) count by. A restarted engine's counters are new whole; a series
    absent from a real earlier scrape (one that held counters) started at 0 within the interval;
    with no earlier scrape of counters at all, what happened before it is not known: None, never
    the whole counter counted as new."""
    missing = 0.0 if before.counters or restarted else None
    prior = {} if restarted else before.counters
    out: dict[str, float | None] = {}
    for key in set(prior) | set(after.counters):
        out[key] = _delta(prior.get(key, missing), after.counter(key))[0]
    return out


def histogram_quantile(q: float, buckets: tuple[tuple[float, float], ...]) -> float | None:
    """Prometheus' histogram_quantile over cumulative (le, count) buckets."""
    if not buckets:
        return None
    total = buckets[-1][1]
    if total <= 0 or math.isnan(total):
        return None
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, cumulative in buckets:
        if cumulative >= rank:
            if math.isinf(bound):
                return lower_bound  # the +Inf bucket: the highest finite bound is all we know
            if cumulative == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (cumulative - lower_count)
        lower_bound, lower_count = bound, cumulative
    return lower_bound


def quantile_estimate(q: float, buckets: tuple[tuple[float, float], ...]) -> Estimate | None:
    """The q-quantile of cumulative (le, count) buckets, never interpolated where the buckets
    say nothing: in the first bucket it is only known to be below its edge, in +Inf above the
    last finite one."""
    if not buckets or buckets[-1][1] <= 0 or math.isnan(buckets[-1][1]):
        return None
    rank = q * buckets[-1][1]
    holder = next(i for i, (_, cumulative) in enumerate(buckets) if cumulative >= rank)
    edge = buckets[holder][0]
    if math.isinf(edge):
        return Estimate(buckets[holder - 1][0], ">") if holder else None
    if holder == 0:
        return Estimate(edge, "<")
    value = histogram_quantile(q, buckets)
    return None if value is None else Estimate(value, "~")


def histogram_increase(
    before: Histogram | None, after: Histogram | None, restarted: bool = False
) -> tuple[tuple[tuple[float, float], ...], float, float]:
    """What a histogram observed between two scrapes, as cumulative (le, count) buckets, the count
    and the sum: the one rule the dashboard and the record take it by. A restart, a count that fell,
    or increases that are not cumulative themselves (a bucket gained less than one below it: the
    engine started again between the scrapes, its counts grown past the old ones) take `after` whole."""
    if after is None:
        return (), 0.0, 0.0
    if before is None or restarted or after.count < before.count:
        return after.buckets, after.count, after.sum
    previous = dict(before.buckets)
    gained = [(le, count - previous.get(le, 0.0)) for le, count in after.buckets]
    if any(n < 0 for _, n in gained) or any(b[1] < a[1] for a, b in itertools.pairwise(gained)):
        return after.buckets, after.count, after.sum
    return tuple(gained), after.count - before.count, after.sum - before.sum


def _rate(value: float | None, seconds: float) -> float | None:
    return None if value is None or seconds <= 0 else value / seconds


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def engine_restarted(before: EngineSnapshot, after: EngineSnapshot) -> bool:
    """vLLM started again between two scrapes: its process start moved (by more than a second: the
    start is read back from the process, to the jiffy), else any counter of both scrapes fell."""
    if before.process_start and after.process_start and abs(after.process_start - before.process_start) > 1:
        return True
    return any(after.counters[k] < before.counters[k] for k in before.counters.keys() & after.counters.keys())


def latency_quantiles(before: EngineSnapshot, after: EngineSnapshot) -> dict[str, Quantiles]:
    """TTFT, ITL, TPOT, e2e and queue p50/p95 of what the histograms observed between two scrapes."""
    latency = {}
    for key in after.histograms:
        buckets, count, _ = histogram_increase(before.histograms.get(key), after.histograms[key])
        latency[key] = Quantiles(quantile_estimate(0.5, buckets), quantile_estimate(0.95, buckets), count)
    return latency


def interval(
    before: EngineSnapshot,
    after: EngineSnapshot,
    seconds: float | None = None,
    power_before: tuple[GpuSample, ...] = (),
    power_after: tuple[GpuSample, ...] = (),
    serving_gpus: frozenset[int] | None = None,
) -> IntervalFigures:
    span = seconds if seconds is not None else after.timestamp - before.timestamp
    # One rule with the record (record/rows.py builds its rows by it): a restarted engine's counters
    # count from zero, whatever they were before, so everything in `after` is new.
    restarted = engine_restarted(before, after)  # any counter that fell is a restart too
    deltas = counter_increases(before, after, restarted)
    if restarted:
        before = replace(before, counters={}, prompt_by_source={}, finished_by_reason={}, accepted_per_position={}, histograms={})
    sources = {}
    for source in after.prompt_by_source:  # a labelled series that appears mid-interval started from 0
        sources[source], reset = _delta(before.prompt_by_source.get(source, 0.0), after.prompt_by_source[source])
        restarted = restarted or reset
    finished = {}
    for reason in set(after.finished_by_reason):
        value, reset = _delta(before.finished_by_reason.get(reason, 0.0), after.finished_by_reason[reason])
        restarted = restarted or reset
        if value:
            finished[reason] = value
    latency = latency_quantiles(before, after)
    drafts = deltas.get("spec_drafts")
    per_position = (
        tuple(
            (_delta(before.accepted_per_position.get(p, 0.0), after.accepted_per_position[p])[0] or 0.0) / drafts
            for p in sorted(after.accepted_per_position)
        )
        if drafts
        else ()
    )
    # V0 servers exported rates and a hit rate as gauges; use them where no counter exists.
    prompt_tps = _rate(deltas.get("prompt_tokens"), span)
    generation_tps = _rate(deltas.get("generation_tokens"), span)
    hit_rate = _ratio(deltas.get("prefix_hits"), deltas.get("prefix_queries"))
    lifetime = _ratio(after.counter("prefix_hits"), after.counter("prefix_queries"))
    power = _mean_power(power_before, power_after, serving_gpus)
    return IntervalFigures(
        seconds=span,
        restarted=restarted,
        prompt_tps=prompt_tps if prompt_tps is not None else after.legacy_prompt_tps,
        generation_tps=generation_tps if generation_tps is not None else after.legacy_generation_tps,
        prefill_compute_tps=_rate(sources.get("local_compute"), span),
        hit_rate=hit_rate if "prefix_queries" in deltas else after.legacy_hit_rate,
        hit_rate_lifetime=lifetime if lifetime is not None else after.legacy_hit_rate,
        preemptions=deltas.get("preemptions"),
        latency=latency,
        acceptance_rate=_ratio(deltas.get("spec_accepted_tokens"), deltas.get("spec_draft_tokens")),
        mean_acceptance_length=_mean_length(deltas.get("spec_accepted_tokens"), drafts),
        acceptance_per_position=per_position,
        finished=finished,
        power_w=power,
        decoding=bool(deltas.get("generation_tokens")) or bool(after.running),
        joules_per_token=power / generation_tps if power is not None and generation_tps else None,
        external_hit_rate=_ratio(deltas.get("external_prefix_hits"), deltas.get("external_prefix_queries")),
        offload_store_bps=_rate(deltas.get("offload_store_bytes"), span),
        offload_load_bps=_rate(deltas.get("offload_load_bytes"), span),
    )


def _mean_length(accepted: float | None, drafts: float | None) -> float | None:
    """vLLM's mean acceptance length: 1 + accepted tokens per draft."""
    return None if not drafts or accepted is None else 1 + accepted / drafts


def _mean_power(before: tuple[GpuSample, ...], after: tuple[GpuSample, ...], gpus: frozenset[int] | None) -> float | None:
    """Mean power of the serving GPUs: from the energy counters when both samples have them."""
    if not after:
        return None
    earlier = {s.index: s for s in before}
    total, found = 0.0, False
    for sample in after:
        if gpus is not None and sample.index not in gpus:
            continue
        prior = earlier.get(sample.index)
        if (
            prior
            and prior.energy_j is not None
            and sample.energy_j is not None
            and sample.timestamp > prior.timestamp
            and sample.energy_j >= prior.energy_j
        ):  # a counter that went down was reset (driver reload)
            total += (sample.energy_j - prior.energy_j) / (sample.timestamp - prior.timestamp)
            found = True
        elif sample.power_w is not None:
            total += sample.power_w if prior is None or prior.power_w is None else (sample.power_w + prior.power_w) / 2
            found = True
    return total if found else None
