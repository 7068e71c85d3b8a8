"""vLLM's /metrics names, current first, then every older name a figure had (the V0 gauges,
gpu_prefix_cache_*, time_per_output_token_seconds): a renamed metric in a new vLLM is an edit here.
engine/metrics.py reads a scrape by these."""

from __future__ import annotations

P = "vllm:"

COUNTERS = {
    "prefix_queries": ("prefix_cache_queries_total", "gpu_prefix_cache_queries_total"),
    "prefix_hits": ("prefix_cache_hits_total", "gpu_prefix_cache_hits_total"),
    # a KV connector's cache (LMCache, ...) can outlive a restart: hits there are a warm cache too
    "external_prefix_queries": ("external_prefix_cache_queries_total",),
    "external_prefix_hits": ("external_prefix_cache_hits_total",),
    "prompt_tokens": ("prompt_tokens_total",),
    "generation_tokens": ("generation_tokens_total",),
    "preemptions": ("num_preemptions_total",),
    "spec_drafts": ("spec_decode_num_drafts_total",),
    "spec_draft_tokens": ("spec_decode_num_draft_tokens_total",),
    "spec_accepted_tokens": ("spec_decode_num_accepted_tokens_total",),
    "prompt_cached": ("prompt_tokens_cached_total",),
    # vLLM 0.33's native KV offload to host RAM (--kv-offloading-size)
    "offload_store_bytes": ("kv_offload_store_bytes_total",),
    "offload_load_bytes": ("kv_offload_load_bytes_total",),
}
HISTOGRAMS = {
    "ttft": ("time_to_first_token_seconds",),
    "itl": ("inter_token_latency_seconds", "time_per_output_token_seconds"),  # same semantics, renamed in 0.11
    "tpot": ("request_time_per_output_token_seconds",),
    "e2e": ("e2e_request_latency_seconds",),
    "queue": ("request_queue_time_seconds",),
    "prefill": ("request_prefill_time_seconds",),
}

# Every family snapshot() reads: the dashboard's scrape parses these and skips the rest.
READ_FAMILIES = (
    "num_requests_running",
    "num_requests_waiting",
    "kv_cache_usage_perc",
    "gpu_cache_usage_perc",
    "cache_config_info",
    "num_requests_waiting_by_reason",
    "prompt_tokens_by_source_total",
    "request_success_total",
    "spec_decode_num_accepted_tokens_per_pos_total",
    "gpu_prefix_cache_hit_rate",
    "avg_prompt_throughput_toks_per_s",
    "avg_generation_throughput_toks_per_s",
)
SNAPSHOT_NAMES = frozenset(
    [P + n for n in READ_FAMILIES]
    + [P + n for names in COUNTERS.values() for n in names]
    + [f"{P}{n}{part}" for names in HISTOGRAMS.values() for n in names for part in ("_bucket", "_sum", "_count")]
    + ["process_start_time_seconds"]
)

# vLLM 0.33 default buckets (vllm/v1/metrics: TTFT 1 ms..2560 s, ITL/TPOT 10 ms..80 s,
# request phases 0.3 s..7680 s).
# fmt: off
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
    80.0, 160.0, 640.0, 2560.0)
TOKEN_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
    80.0)
PHASE_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
    960.0, 1920.0, 7680.0)
# fmt: on
