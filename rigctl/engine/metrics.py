"""One /metrics scrape -> EngineSnapshot: the figures an owner reads, for every vLLM generation.

Current names first, then the old ones (gpu_cache_usage_perc, gpu_prefix_cache_*,
time_per_output_token_seconds, the V0 gauges). With data parallelism (several `engine`
label values) running and waiting are summed, KV usage averaged, and per-engine figures
kept. A metric that is absent is None (shown as n/a), never 0.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from rigctl.engine.prom import Exposition, Labels
from rigctl.rules import Amount, Fraction, Rule, RuleError, complaint
from rigctl.vllm.metric_names import COUNTERS, HISTOGRAMS, SNAPSHOT_NAMES, P

# "The KV cache is full" for every view (the health check, the watch service's alert, the shipped
# Prometheus rule): this fraction of a pool, with requests waiting. A paged pool under more demand
# than it holds hovers just below full (vLLM admits only what whole free blocks take, then
# preempts), rarely at 100%: a 0.99 line almost never fires on the rig that needs it.
KV_FULL_FRACTION = 0.95


@dataclass(frozen=True)
class Histogram:
    """Cumulative buckets (upper bound, count), summed over engines and models."""

    buckets: tuple[tuple[float, float], ...]
    sum: float
    count: float


@dataclass(frozen=True)
class EngineFigures:
    engine: str
    running: float | None = None
    waiting: float | None = None
    kv_usage: float | None = None  # fraction 0..1
    kv_pool_tokens: int | None = None
    kv_max_concurrency: float | None = None


@dataclass(frozen=True)
class EngineSnapshot:
    timestamp: float
    model_names: tuple[str, ...] = ()
    engines: tuple[EngineFigures, ...] = ()
    running: float | None = None
    waiting: float | None = None
    waiting_by_reason: dict[str, float] = field(default_factory=dict)
    kv_usage: float | None = None
    kv_pool_tokens: int | None = None  # per engine (each DP replica has its own pool)
    kv_max_concurrency: float | None = None
    block_size: int | None = None
    counters: dict[str, float] = field(default_factory=dict)  # prefix_queries, prefix_hits, prompt_tokens, ...
    prompt_by_source: dict[str, float] = field(default_factory=dict)
    finished_by_reason: dict[str, float] = field(default_factory=dict)
    accepted_per_position: dict[int, float] = field(default_factory=dict)
    histograms: dict[str, Histogram] = field(default_factory=dict)  # ttft, itl, tpot, e2e, queue
    legacy_hit_rate: float | None = None  # V0 gauge vllm:gpu_prefix_cache_hit_rate
    legacy_prompt_tps: float | None = None  # V0 avg_prompt_throughput_toks_per_s
    legacy_generation_tps: float | None = None
    process_start: float | None = None
    truncated: bool = False
    vllm: bool = False  # a family snapshot() reads was there: False means it was not vLLM that answered
    refused: tuple[str, ...] = ()  # samples no engine gives (a negative count, a share above 1), each named

    def counter(self, name: str) -> float | None:
        return self.counters.get(name)

    @property
    def kv_usage_fullest(self) -> float | None:
        """The fullest engine's pool: each DP replica has its own, and the mean would hide one that
        is full while the other idles (the Prometheus rule's `max by (rig)` too)."""
        usages = [e.kv_usage for e in self.engines if e.kv_usage is not None]
        return max(usages) if usages else self.kv_usage

    @property
    def kv_full(self) -> bool:
        """A pool full (KV_FULL_FRACTION) with requests waiting: a full pool nobody waits on is one
        well used."""
        fullest = self.kv_usage_fullest
        return fullest is not None and fullest >= KV_FULL_FRACTION and (self.waiting or 0.0) > 0

    @property
    def is_vllm(self) -> bool:
        return self.vllm


def _dict(labels: Labels) -> dict[str, str]:
    return dict(labels)


def _label(labels: Labels, key: str, default: str | None = None) -> str | None:
    """One label's value; a scan of a few pairs is cheaper than a dict per sample."""
    for name, value in labels:
        if name == key:
            return value
    return default


# The rule each family's samples pass (rigctl/rules.py), as every outside value does: a count of
# requests or tokens below zero or infinite, or a share of the KV cache above 1, is no figure an
# engine gives. Such a sample is refused and named (EngineSnapshot.refused), never summed into a
# figure; NaN stays what Prometheus means by it, no value, as before.
COUNTED = Amount("")
_LARGEST = 1.7976931348623157e308  # the largest finite float: the rules refuse infinities
SHARES: dict[str, Rule] = {
    "kv_cache_usage_perc": Fraction("the KV cache", "0.42"),
    "gpu_cache_usage_perc": Fraction("the KV cache", "0.42"),
    "gpu_prefix_cache_hit_rate": Fraction("prompt tokens found cached", "0.42"),
}


def _ruled(family: str, samples: list[tuple[Labels, float]], refused: list[str] | None) -> list[tuple[Labels, float]]:
    rule = SHARES.get(family.removeprefix(P), COUNTED)
    high = 1.0 if rule is not COUNTED else _LARGEST
    if all(0.0 <= value <= high or value != value for _, value in samples):  # the usual scrape: no call per sample
        return samples
    kept = []
    for labels, value in samples:
        if value == value and not rule.accepts(value):  # value == value: not NaN
            if refused is not None:
                try:
                    rule.parse(value)
                except RuleError as exc:
                    refused.append(f"{family}: {complaint(exc, value)}")
            continue
        kept.append((labels, value))
    return kept


def _first(expo: Exposition, *names: str, refused: list[str] | None = None) -> list[tuple[Labels, float]]:
    for name in names:
        samples = expo.get(P + name)
        if samples:
            return _ruled(P + name, samples, refused)
    return []


def _by_engine(samples: list[tuple[Labels, float]]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for labels, value in samples:
        out[_label(labels, "engine", "0")] += value  # type: ignore[index]
    return dict(out)


def _total(samples: list[tuple[Labels, float]]) -> float | None:
    return sum(v for _, v in samples if not math.isnan(v)) if samples else None


def _by_label(samples: list[tuple[Labels, float]], label: str) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for labels, value in samples:
        key = _label(labels, label)
        if key is not None:
            out[key] += value
    return dict(out)


def _histogram(expo: Exposition, *names: str, refused: list[str] | None = None) -> Histogram | None:
    for name in names:
        buckets = _ruled(f"{P}{name}_bucket", expo.get(f"{P}{name}_bucket"), refused)
        if not buckets:
            continue
        sums: dict[float, float] = defaultdict(float)
        for labels, value in buckets:
            bound = _bound(_label(labels, "le"))
            if bound is not None:
                sums[bound] += value
        return Histogram(
            buckets=tuple(sorted(sums.items())),
            sum=_total(_ruled(f"{P}{name}_sum", expo.get(f"{P}{name}_sum"), refused)) or 0.0,
            count=_total(_ruled(f"{P}{name}_count", expo.get(f"{P}{name}_count"), refused)) or 0.0,
        )
    return None


def _bound(text: str | None) -> float | None:
    """A bucket's upper bound ("+Inf" included); None for one that is not a number."""
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return None if value is None or math.isnan(value) else value


def _cache_info(expo: Exposition) -> dict[str, dict[str, str]]:
    return {_dict(labels).get("engine", "0"): _dict(labels) for labels, _ in expo.get(P + "cache_config_info")}


def _num(text: str | None) -> float | None:
    """A label's number; None when it is absent or not a finite number (a hostile or broken
    exposition must not reach an int() with an infinity)."""
    try:
        value = float(text) if text not in (None, "None", "") else None
    except (ValueError, OverflowError):
        return None
    return value if value is not None and math.isfinite(value) else None


def snapshot(expo: Exposition, timestamp: float) -> EngineSnapshot:
    refused: list[str] = []
    running = _by_engine(_first(expo, "num_requests_running", refused=refused))
    waiting = _by_engine(_first(expo, "num_requests_waiting", refused=refused))
    usage = _by_engine(_first(expo, "kv_cache_usage_perc", "gpu_cache_usage_perc", refused=refused))
    info = _cache_info(expo)
    engines = []
    for engine in sorted(set(running) | set(waiting) | set(usage) | set(info), key=lambda e: (len(e), e)):
        config = info.get(engine, {})
        pool = _num(config.get("kv_cache_size_tokens"))
        blocks, block_size = _num(config.get("num_gpu_blocks")), _num(config.get("block_size"))
        if pool is None and blocks and block_size:
            pool = blocks * block_size
        engines.append(
            EngineFigures(
                engine,
                running.get(engine),
                waiting.get(engine),
                usage.get(engine),
                int(pool) if pool is not None and math.isfinite(pool) else None,
                _num(config.get("kv_cache_max_concurrency")),
            )
        )
    models = sorted(
        {_label(labels, "model_name", "") or "" for samples in expo.samples.values() for labels, _ in samples[:1]} - {""}
    )
    pools = [e.kv_pool_tokens for e in engines if e.kv_pool_tokens is not None]
    conc = [e.kv_max_concurrency for e in engines if e.kv_max_concurrency is not None]
    usages = [v for v in usage.values() if not math.isnan(v)]
    counters = {}
    for key, names in COUNTERS.items():
        value = _total(_first(expo, *names, refused=refused))
        if value is not None:
            counters[key] = value
    histograms = {key: h for key, names in HISTOGRAMS.items() if (h := _histogram(expo, *names, refused=refused)) is not None}
    block = next((_num(c.get("block_size")) for c in info.values() if _num(c.get("block_size"))), None)
    start = expo.get("process_start_time_seconds")
    return EngineSnapshot(
        timestamp=timestamp,
        model_names=tuple(models),
        engines=tuple(engines),
        running=sum(running.values()) if running else None,
        waiting=sum(waiting.values()) if waiting else None,
        waiting_by_reason=_by_label(_first(expo, "num_requests_waiting_by_reason", refused=refused), "reason"),
        kv_usage=sum(usages) / len(usages) if usages else None,
        kv_pool_tokens=pools[0] if pools else None,
        kv_max_concurrency=conc[0] if conc else None,
        block_size=int(block) if block else None,
        counters=counters,
        prompt_by_source=_by_label(_first(expo, "prompt_tokens_by_source_total", refused=refused), "source"),
        finished_by_reason=_by_label(_first(expo, "request_success_total", refused=refused), "finished_reason"),
        accepted_per_position={
            int(k): v
            for k, v in _by_label(
                _first(expo, "spec_decode_num_accepted_tokens_per_pos_total", refused=refused), "position"
            ).items()
            if k.isascii() and k.isdigit() and len(k) < 7
        },
        histograms=histograms,
        legacy_hit_rate=_total(_first(expo, "gpu_prefix_cache_hit_rate", refused=refused)),
        legacy_prompt_tps=_total(_first(expo, "avg_prompt_throughput_toks_per_s", refused=refused)),
        legacy_generation_tps=_total(_first(expo, "avg_generation_throughput_toks_per_s", refused=refused)),
        process_start=start[0][1] if start else None,
        truncated=expo.truncated,
        vllm=any(name in SNAPSHOT_NAMES and name.startswith(P) for name in expo.samples),
        refused=tuple(refused),
    )
