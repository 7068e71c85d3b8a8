"""The serving record read from the owner's Prometheus instead of rigctl's own file: range
queries over its HTTP API on vLLM's own metric names (and DCGM's energy counter when the GPU
exporter is scraped), turned into the same rows, so history older than rigctl is usable.

Each step's samples are put back together as a scrape and read by the same code that reads a
live /metrics (engine/metrics.snapshot), so every metric-name fallback applies here too. Rows
are tagged with the profile whose boot (history.jsonl) precedes them.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_right
from collections import defaultdict
from typing import Any

from rigctl.engine.metrics import COUNTERS, HISTOGRAMS, P, snapshot
from rigctl.engine.prom import Exposition, Labels
from rigctl.errors import RigctlError
from rigctl.record.rows import Row, interval
from rigctl.serve.boots import read_history

MAX_POINTS = 10_000  # Prometheus refuses a range query of more than 11,000 points a series
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # mJ since boot, per GPU (dcgm-exporter)
KEEP_LABELS = ("le", "finished_reason", "engine", "model_name")


def _names() -> list[str]:
    names = [n for names in COUNTERS.values() for n in names]
    names += [f"{n}{part}" for names in HISTOGRAMS.values() for n in names for part in ("_bucket", "_sum", "_count")]
    names += ["request_success_total", "num_requests_running", "num_requests_waiting", "kv_cache_usage_perc",
              "gpu_cache_usage_perc"]
    return names


class PrometheusSource:
    def __init__(self, url: str, timeout: float = 30.0, min_step: float = 10.0) -> None:
        self.url, self.timeout, self.min_step = url.rstrip("/"), timeout, min_step

    def _range(self, query: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        import httpx

        try:
            answer = httpx.get(f"{self.url}/api/v1/query_range", params={"query": query, "start": start, "end": end,
                                                                           "step": step}, timeout=self.timeout)
        except httpx.HTTPError as exc:
            raise RigctlError(f"Prometheus at {self.url} did not answer: {exc}") from exc
        try:
            body = answer.json()
        except ValueError:
            raise RigctlError(f"Prometheus at {self.url} answered HTTP {answer.status_code} without JSON") from None
        if body.get("status") != "success":
            raise RigctlError(f"Prometheus at {self.url}: {body.get('errorType', 'error')}: {body.get('error', body)}")
        result = body.get("data", {}).get("result", [])
        return result if isinstance(result, list) else []

    def rows(self, start: float, end: float, step: float | None = None) -> list[Row]:
        step = step or max(self.min_step, math.ceil((end - start) / MAX_POINTS))
        pattern = "|".join(sorted(_names()))
        keep = ", ".join(("__name__", *KEEP_LABELS))
        series = self._range(f'sum by ({keep}) ({{__name__=~"vllm:({pattern})"}})', start, end, step)
        series += self._range(f"{P}cache_config_info", start, end, step)
        energy = {float(t): float(v) for s in self._range(f"sum({ENERGY})", start, end, step) for t, v in s["values"]}
        at: dict[float, Exposition] = defaultdict(Exposition)
        for one in series:
            metric = dict(one.get("metric", {}))
            name = metric.pop("__name__", None) or f"{P}cache_config_info"
            labels: Labels = tuple(sorted(metric.items()))
            for t, value in one.get("values", []):
                at[float(t)].samples.setdefault(name, []).append((labels, float(value)))
        boots = sorted((r.when, r.profile) for r in read_history().records)
        times = sorted(at)
        out: list[Row] = []
        for before_t, after_t in itertools.pairwise(times):
            if after_t - before_t > step * 1.5:
                continue  # a gap: vLLM was not scraped (down, or a switch)
            before, after = snapshot(at[before_t], before_t), snapshot(at[after_t], after_t)
            profile, boot = _tag(boots, after_t, after.model_names)
            used = after.kv_usage
            joules = None
            if before_t in energy and after_t in energy and energy[after_t] >= energy[before_t]:
                joules = (energy[after_t] - energy[before_t]) / 1000
            out.append(interval(before, after, profile, boot, seconds=after_t - before_t, kv_usage_max=used,
                                kv_usage_seconds=(used or 0.0) * (after_t - before_t), running_max=after.running,
                                waiting_max=after.waiting, energy_j=joules))
        return out


def _tag(boots: list[tuple[float, str]], t: float, models: tuple[str, ...]) -> tuple[str, str]:
    """The profile whose boot came last before t (its record is written once it serves)."""
    at = bisect_right(boots, (t, "\uffff"))
    if at == 0:
        name = f"(model {models[0]})" if models else "(before any rigctl boot)"
        return name, "prometheus"
    when, profile = boots[at - 1]
    return profile, f"{profile}@{when:.0f}"
