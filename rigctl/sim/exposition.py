"""The simulated engine's Stats as Prometheus text, family by family as vLLM 0.33 exposes them."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from rigctl.sim.stats import COUNTERS, GAUGES, HISTOGRAMS, Stats, go_float

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def render(stats: Stats, model_name: str, cache_info: dict[str, str], started: float) -> str:
    lines: list[str] = []
    add = lines.append
    engines = range(stats.engines)
    add("# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.")
    add("# TYPE process_start_time_seconds gauge")
    add(f"process_start_time_seconds {go_float(started)}")
    add("# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.")
    add("# TYPE process_cpu_seconds_total counter")
    times = os.times()
    add(f"process_cpu_seconds_total {go_float(times.user + times.system)}")
    for name, help_text in GAUGES.items():
        add(f"# HELP vllm:{name} {help_text}")
        add(f"# TYPE vllm:{name} gauge")
        for e in engines:
            add(f"vllm:{name}{_labels(engine=str(e), model_name=model_name)} {go_float(stats._gauges.get((name, e), 0.0))}")
        if name == "num_requests_waiting":
            add("# HELP vllm:num_requests_waiting_by_reason Number of requests waiting, by reason.")
            add("# TYPE vllm:num_requests_waiting_by_reason gauge")
            for e in engines:
                waiting = stats._gauges.get((name, e), 0.0)
                for reason, value in (("capacity", waiting), ("deferred", 0.0)):
                    add(
                        f"vllm:num_requests_waiting_by_reason{_labels(engine=str(e), model_name=model_name, reason=reason)}"
                        f" {go_float(value)}"
                    )
    counters = sorted(set(stats._counters), key=lambda k: (list(COUNTERS).index(k[0]), k[1], k[3] or ""))
    for name in COUNTERS:
        keys = [k for k in counters if k[0] == name]
        if not keys or (name.startswith("spec_decode") and not stats.spec) or (name.startswith("kv_offload") and not stats.offload):
            continue
        for suffix, kind in (("_total", "counter"), ("_created", "gauge")):
            add(f"# HELP vllm:{name}{suffix} {COUNTERS[name]}")
            add(f"# TYPE vllm:{name}{suffix} {kind}")
            for key in keys:
                _, e, label, label_value = key
                extra = {label: label_value} if label and label_value else {}
                value = stats._counters[key] if kind == "counter" else stats.created
                add(f"vllm:{name}{suffix}{_labels(engine=str(e), model_name=model_name, **extra)} {go_float(value)}")
    for name, (help_text, _) in HISTOGRAMS.items():
        add(f"# HELP vllm:{name} {help_text}")
        add(f"# TYPE vllm:{name} histogram")
        for e in engines:
            hist = stats._hist[(name, e)]
            running = 0
            for bound, count in zip([*hist.buckets, float("inf")], hist.counts, strict=True):
                running += count
                add(f"vllm:{name}_bucket{_labels(engine=str(e), le=go_float(bound), model_name=model_name)} {go_float(running)}")
            add(f"vllm:{name}_count{_labels(engine=str(e), model_name=model_name)} {go_float(hist.n)}")
            add(f"vllm:{name}_sum{_labels(engine=str(e), model_name=model_name)} {go_float(hist.total)}")
        add(f"# HELP vllm:{name}_created {help_text}")
        add(f"# TYPE vllm:{name}_created gauge")
        for e in engines:
            add(f"vllm:{name}_created{_labels(engine=str(e), model_name=model_name)} {go_float(stats.created)}")
    _quiet_families(add, engines, model_name, stats.created)
    add("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig")
    add("# TYPE vllm:cache_config_info gauge")
    for e in engines:
        add(f"vllm:cache_config_info{_labels(engine=str(e), **cache_info)} 1.0")
    add("")
    return "\n".join(lines)


# Families real vLLM 0.32/0.33 expose that the simulated engine has no figures for: present,
# with vLLM's names, types and bucket edges, so a scrape of the simulator has every family a
# scrape of vLLM has (tests/sim compares them with a real CPU-build scrape).
_QUIET_COUNTERS = (
    "estimated_flops_per_gpu",
    "estimated_read_bytes_per_gpu",
    "estimated_write_bytes_per_gpu",
    "external_prefix_cache_queries",
    "external_prefix_cache_hits",
    "mm_cache_queries",
    "mm_cache_hits",
)
_QUIET_HISTOGRAMS = {
    "iteration_tokens_total": (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384),
    "request_max_num_generation_tokens": (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000),
    "request_num_preemptions": (1, 2, 5, 10, 20, 50, 100),
    "request_params_max_tokens": (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000),
    "request_params_n": (1, 2, 5, 10, 20),
    "request_prefill_kv_computed_tokens": (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000),
}


def _quiet_families(add: Callable[[str], None], engines: range, model_name: str, created: float) -> None:
    add("# TYPE vllm:admission_rejections_total counter")
    for reason in ("max_num_queued_reqs", "max_num_queued_tokens"):
        add(f"vllm:admission_rejections_total{_labels(model_name=model_name, reason=reason)} 0.0")
    for e in engines:
        labels = {"engine": str(e), "model_name": model_name}
        add("# TYPE vllm:engine_sleep_state gauge")
        for state, value in (("awake", 1.0), ("weights_offloaded", 0.0), ("discard_all", 0.0)):
            add(f"vllm:engine_sleep_state{_labels(**labels, sleep_state=state)} {value}")
        for name in _QUIET_COUNTERS:
            add(f"# TYPE vllm:{name}_total counter")
            add(f"vllm:{name}_total{_labels(**labels)} 0.0")
            add(f"vllm:{name}_created{_labels(**labels)} {go_float(created)}")
        add("# TYPE vllm:prompt_tokens_cached_by_source_total counter")
        for source in ("device", "host", "disk", "p2p", "external_unspecified"):
            add(f"vllm:prompt_tokens_cached_by_source_total{_labels(**labels, source=source)} 0.0")
        for name, edges in _QUIET_HISTOGRAMS.items():
            add(f"# TYPE vllm:{name} histogram")
            for edge in (*edges, float("inf")):
                add(f"vllm:{name}_bucket{_labels(engine=str(e), le=go_float(float(edge)), model_name=model_name)} 0.0")
            add(f"vllm:{name}_count{_labels(**labels)} 0.0")
            add(f"vllm:{name}_sum{_labels(**labels)} 0.0")


def now() -> float:
    return time.time()
