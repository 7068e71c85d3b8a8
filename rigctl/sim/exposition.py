"""The simulated engine's Stats as Prometheus text, family by family as vLLM 0.33 exposes them."""

from __future__ import annotations

import os
import time

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
                    add(f"vllm:num_requests_waiting_by_reason{_labels(engine=str(e), model_name=model_name, reason=reason)}"
                        f" {go_float(value)}")
    counters = sorted({key for key in stats._counters}, key=lambda k: (list(COUNTERS).index(k[0]), k[1], k[3] or ""))
    for name in COUNTERS:
        keys = [k for k in counters if k[0] == name]
        if not keys or (name.startswith("spec_decode") and not stats.spec):
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
            for bound, count in zip([*hist.buckets, float("inf")], hist.counts):
                running += count
                add(f"vllm:{name}_bucket{_labels(engine=str(e), le=go_float(bound), model_name=model_name)} {go_float(running)}")
            add(f"vllm:{name}_count{_labels(engine=str(e), model_name=model_name)} {go_float(hist.n)}")
            add(f"vllm:{name}_sum{_labels(engine=str(e), model_name=model_name)} {go_float(hist.total)}")
        add(f"# HELP vllm:{name}_created {help_text}")
        add(f"# TYPE vllm:{name}_created gauge")
        for e in engines:
            add(f"vllm:{name}_created{_labels(engine=str(e), model_name=model_name)} {go_float(stats.created)}")
    add("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig")
    add("# TYPE vllm:cache_config_info gauge")
    for e in engines:
        add(f"vllm:cache_config_info{_labels(engine=str(e), **cache_info)} 1.0")
    add("")
    return "\n".join(lines)


def now() -> float:
    return time.time()
