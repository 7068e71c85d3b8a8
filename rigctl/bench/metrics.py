"""The figures a bench arm yields, by name: what a gate or a guard may name, which way is
better, and how each is shown. Names say the unit (`_s` seconds, `_tok_per_s`), and the
latency ones are defined as `vllm bench serve` defines them, so figures compare with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Direction = Literal["higher", "lower"]  # which way a figure is better
MetricKind = Literal["rate", "seconds", "ratio", "count", "joules", "tokens"]


@dataclass(frozen=True)
class Metric:
    name: str
    better: Direction
    label: str  # the table's column head
    kind: MetricKind
    about: str


def _m(name: str, better: Direction, label: str, kind: MetricKind, about: str) -> Metric:
    return Metric(name, better, label, kind, about)


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        _m("output_tok_per_s", "higher", "out tok/s", "rate", "output tokens of the run / its duration (aggregate)"),
        _m("total_tok_per_s", "higher", "tot tok/s", "rate", "prompt + output tokens / duration"),
        _m("request_per_s", "higher", "req/s", "rate", "completed requests / duration"),
        _m("ttft_p50_s", "lower", "TTFT p50", "seconds", "time to first token, median over requests"),
        _m("ttft_p95_s", "lower", "TTFT p95", "seconds", "time to first token, 95th percentile"),
        _m("ttft_mean_s", "lower", "TTFT mean", "seconds", "time to first token, mean"),
        _m("tpot_p50_s", "lower", "TPOT p50", "seconds", "(e2e - TTFT) / (output tokens - 1), median over requests"),
        _m("tpot_p95_s", "lower", "TPOT p95", "seconds", "time per output token, 95th percentile over requests"),
        _m("tpot_mean_s", "lower", "TPOT mean", "seconds", "time per output token, mean over requests"),
        _m("itl_p50_s", "lower", "ITL p50", "seconds", "gap between streamed chunks, every gap of every request"),
        _m("itl_p95_s", "lower", "ITL p95", "seconds", "inter-token latency, 95th percentile"),
        _m("e2e_p50_s", "lower", "e2e p50", "seconds", "request latency end to end, median"),
        _m("e2e_p95_s", "lower", "e2e p95", "seconds", "request latency end to end, 95th percentile"),
        _m("decode_tok_per_s_stream", "higher", "dec tok/s/stream", "rate", "1 / TPOT, median over requests"),
        _m("decode_tok_per_s_worst", "higher", "worst stream", "rate", "1 / TPOT of the slowest request"),
        _m("j_per_token", "lower", "J/token", "joules", "GPU energy of the serving GPUs / output tokens"),
        _m("prefix_hit_rate", "higher", "hit rate", "ratio", "prefix-cache hits / queries over the measured window"),
        _m("preemptions", "lower", "preempt", "count", "vllm:num_preemptions over the measured window"),
        _m("spec_acceptance_rate", "higher", "accept", "ratio", "accepted / drafted tokens over the measured window"),
        _m("spec_acceptance_length", "higher", "accept len", "ratio", "1 + accepted tokens per draft"),
        _m("kv_usage_peak", "lower", "KV peak", "ratio", "highest vllm:kv_cache_usage_perc sampled during the run"),
        _m("kv_pool_tokens", "higher", "KV pool", "tokens", "the KV pool the engine reported at boot"),
        _m("kv_pool_per_max_len", "higher", "pool/len", "ratio", "KV pool / max_model_len: full-length requests it holds"),
    )
}

# The table owners publish, in this order (bench report, bench --json's arms).
TABLE = (
    "ttft_p50_s",
    "ttft_p95_s",
    "tpot_p50_s",
    "tpot_p95_s",
    "decode_tok_per_s_stream",
    "output_tok_per_s",
    "kv_pool_tokens",
    "kv_pool_per_max_len",
    "prefix_hit_rate",
    "preemptions",
    "kv_usage_peak",
    "j_per_token",
)
# Rows shown only when some arm has the figure (no speculative decoding, no acceptance row).
WHEN_PRESENT = ("spec_acceptance_rate",)


def improvement(metric: Metric, control: float, candidate: float) -> float | None:
    """The candidate's relative change, positive when it is better; None when the control is 0
    (a relative change from nothing means nothing)."""
    if control == 0:
        return None
    change = (candidate - control) / abs(control)
    return change if metric.better == "higher" else -change
