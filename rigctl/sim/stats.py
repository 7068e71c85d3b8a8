"""vLLM's metrics, kept by the simulated engine and exposed in Prometheus text format with
vLLM 0.33's names, labels (model_name, engine), buckets and `_created` companions."""

from __future__ import annotations

import bisect
import math
import threading
import time
from dataclasses import dataclass, field

from rigctl.vllm.metric_names import PHASE_BUCKETS, TOKEN_LATENCY_BUCKETS, TTFT_BUCKETS

HISTOGRAMS = {
    "time_to_first_token_seconds": ("Histogram of time to first token in seconds.", TTFT_BUCKETS),
    "inter_token_latency_seconds": ("Histogram of inter-token latency in seconds.", TOKEN_LATENCY_BUCKETS),
    "request_time_per_output_token_seconds": ("Histogram of time_per_output_token_seconds per request.", TOKEN_LATENCY_BUCKETS),
    "e2e_request_latency_seconds": ("Histogram of e2e request latency in seconds.", PHASE_BUCKETS),
    "request_queue_time_seconds": ("Histogram of time spent in WAITING phase for request.", PHASE_BUCKETS),
    "request_inference_time_seconds": ("Histogram of time spent in RUNNING phase for request.", PHASE_BUCKETS),
    "request_prefill_time_seconds": ("Histogram of time spent in PREFILL phase for request.", PHASE_BUCKETS),
    "request_decode_time_seconds": ("Histogram of time spent in DECODE phase for request.", PHASE_BUCKETS),
    "request_prompt_tokens": ("Number of prefill tokens processed.", None),
    "request_generation_tokens": ("Number of generation tokens processed.", None),
}

COUNTERS = {
    "prefix_cache_queries": "Prefix cache queries, in terms of number of queried tokens.",
    "prefix_cache_hits": "Prefix cache hits, in terms of number of cached tokens.",
    "num_preemptions": "Cumulative number of preemption from the engine.",
    "prompt_tokens": "Number of prefill tokens processed.",
    "prompt_tokens_by_source": "Number of prompt tokens by source.",
    "prompt_tokens_cached": "Number of cached prompt tokens (local + external).",
    "generation_tokens": "Number of generation tokens processed.",
    "request_success": "Count of successfully processed requests.",
    "spec_decode_num_drafts": "Number of spec decoding drafts.",
    "spec_decode_num_draft_tokens": "Number of draft tokens.",
    "spec_decode_num_accepted_tokens": "Number of accepted tokens.",
    "spec_decode_num_accepted_tokens_per_pos": "Accepted tokens per draft position.",
    "external_prefix_cache_queries": "External prefix cache queries from KV connector cross-instance cache sharing.",
    "external_prefix_cache_hits": "External prefix cache hits from KV connector cross-instance cache sharing.",
    "kv_offload_store_bytes": "Number of bytes stored by KV offloading.",
    "kv_offload_load_bytes": "Number of bytes loaded by KV offloading.",
}

GAUGES = {
    "num_requests_running": "Number of requests in model execution batches.",
    "num_requests_waiting": "Number of requests waiting to be processed.",
    "kv_cache_usage_perc": "KV-cache usage. 1 means 100 percent usage.",
}


def go_float(value: float) -> str:
    """Numbers the way prometheus_client writes them (Go's formatting)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    text = repr(float(value))
    dot = text.find(".")
    if value > 0 and dot > 6 and "e" not in text:
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return text


def token_buckets(max_model_len: int) -> tuple[float, ...]:
    """1-2-5 buckets up to max_model_len, as vLLM builds them for token histograms."""
    out: list[float] = []
    exponent = 0
    while True:
        for m in (1, 2, 5):
            value = m * 10**exponent
            if value > max_model_len:
                return tuple(float(v) for v in out)
            out.append(value)
        exponent += 1


@dataclass
class Histogram:
    buckets: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.buckets) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.total += value
        self.n += 1


class Stats:
    def __init__(self, engines: int, max_model_len: int, spec: bool, offload: bool = False) -> None:
        self.engines = engines
        self.spec = spec
        self.offload = offload  # the kv_offload families, as vLLM exposes them: only with --kv-offloading-size
        self.created = time.time()
        self._lock = threading.Lock()
        self._counters: dict[tuple[str, int, str | None, str | None], float] = {}
        self._gauges: dict[tuple[str, int], float] = {}
        tokens = token_buckets(max_model_len)
        self._hist = {(name, e): Histogram(buckets or tokens) for name, (_, buckets) in HISTOGRAMS.items() for e in range(engines)}
        for e in range(engines):
            for reason in ("stop", "length", "abort", "error", "repetition"):
                self._counters[("request_success", e, "finished_reason", reason)] = 0.0
            for source in ("local_compute", "local_cache_hit", "external_kv_transfer"):
                self._counters[("prompt_tokens_by_source", e, "source", source)] = 0.0
            for name in COUNTERS:
                if name not in ("request_success", "prompt_tokens_by_source", "spec_decode_num_accepted_tokens_per_pos"):
                    self._counters[(name, e, None, None)] = 0.0

    def count(self, name: str, value: float, engine: int) -> None:
        with self._lock:
            key = (name, engine, None, None)
            self._counters[key] = self._counters.get(key, 0.0) + value

    def count_by(self, name: str, label: str, label_value: str, value: float, engine: int) -> None:
        with self._lock:
            key = (name, engine, label, label_value)
            self._counters[key] = self._counters.get(key, 0.0) + value

    def gauge(self, name: str, value: float, engine: int) -> None:
        self._gauges[(name, engine)] = value

    def observe(self, name: str, value: float, engine: int) -> None:
        with self._lock:
            self._hist[(name, engine)].observe(value)

    def counter_value(self, name: str, engine: int = 0, label_value: str | None = None) -> float:
        return sum(
            v
            for (n, e, _, lv), v in self._counters.items()
            if n == name and e == engine and (label_value is None or lv == label_value)
        )
