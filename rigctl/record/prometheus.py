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
from urllib.parse import urlencode, urlsplit

from rigctl.engine.http_get import BodyTooLarge, HttpGet, ProtocolError
from rigctl.engine.metrics import snapshot
from rigctl.engine.prom import Exposition, Labels
from rigctl.errors import RigctlError
from rigctl.jsonio import loads_strict
from rigctl.record.rows import Row, interval
from rigctl.state.boots import read_history
from rigctl.vllm.metric_names import COUNTERS, HISTOGRAMS, P

MAX_POINTS = 10_000  # Prometheus refuses a range query of more than 11,000 points a series
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # mJ since boot, per GPU (dcgm-exporter)
KEEP_LABELS = ("le", "finished_reason", "engine", "model_name")


def _names() -> list[str]:
    names = [n for names in COUNTERS.values() for n in names]
    names += [f"{n}{part}" for names in HISTOGRAMS.values() for n in names for part in ("_bucket", "_sum", "_count")]
    names += [
        "request_success_total",
        "num_requests_running",
        "num_requests_waiting",
        "kv_cache_usage_perc",
        "gpu_cache_usage_perc",
    ]
    return names


ANSWER_LIMIT = 64 * 1024 * 1024  # a month of one rig's series at 10 s is a few MB


Series = tuple[dict[str, str], list[tuple[float, float]]]


def range_result(body: Any, where: str) -> list[Series]:
    """A query_range answer's series, each checked for its shape: (labels, [(t, value)]). An answer
    of another shape (a list, data a list, a value that is no number) is one line naming it."""
    if not isinstance(body, dict):
        raise RigctlError(f"{where}: the answer is a JSON {type(body).__name__}, not Prometheus's object")
    if body.get("status") != "success":
        kind, error = str(body.get("errorType", "error"))[:80], str(body.get("error", "no reason given"))[:300]
        raise RigctlError(f"{where}: {kind}: {error}")
    data = body.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("result", []), list):
        raise RigctlError(f"{where}: the answer's data is not a query_range result (an object with a result list)")
    if data.get("resultType", "matrix") != "matrix":
        raise RigctlError(f"{where}: the answer is a {str(data.get('resultType'))[:20]}, not a range (matrix)")
    out: list[Series] = []
    for series in data.get("result", []):
        metric = series.get("metric", {}) if isinstance(series, dict) else None
        values = series.get("values", []) if isinstance(series, dict) else None
        if not isinstance(metric, dict) or not isinstance(values, list):
            raise RigctlError(f"{where}: a series is not an object with a metric and values")
        points = []
        for point in values:
            try:
                t, value = point
                points.append((float(t), float(value)))
            except (TypeError, ValueError) as exc:
                raise RigctlError(f'{where}: a sample is {str(point)[:40]}, not [time, "number"]') from exc
        if not all(math.isfinite(t) for t, _ in points):
            raise RigctlError(f"{where}: a sample's time is not a finite number")
        out.append(({str(k): str(v) for k, v in metric.items()}, points))
    return out


class PrometheusSource:
    def __init__(self, url: str, timeout: float = 30.0, min_step: float = 10.0) -> None:
        """`timeout`: the whole answer to one query, however slowly it comes (a server trickling a
        byte every 2 s must not hold `rigctl report` for minutes)."""
        self.url, self.timeout, self.min_step = url.rstrip("/"), timeout, min_step

    def _range(self, query: str, start: float, end: float, step: float) -> list[Series]:
        body = self.api("query_range", {"query": query, "start": start, "end": end, "step": step})
        return range_result(body, f"Prometheus at {self.url}")

    def instant(self, query: str) -> list[tuple[dict[str, str], float]]:
        """(labels, value) of each series `query` returns now (an instant query)."""
        where = f"Prometheus at {self.url}"
        body = self.api("query", {"query": query})
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(body, dict) or body.get("status") != "success" or not isinstance(data, dict):
            error = body.get("error") if isinstance(body, dict) else None
            raise RigctlError(f"{where} refused {query!r}: {error or 'not a query answer'}")
        out: list[tuple[dict[str, str], float]] = []
        for item in data.get("result") or []:
            try:
                out.append(({str(k): str(v) for k, v in item["metric"].items()}, float(item["value"][1])))
            except (KeyError, IndexError, TypeError, ValueError, AttributeError):
                raise RigctlError(f"{where}: a series of {query!r} is not a sample") from None
        return out

    def api(self, path: str, params: dict[str, Any]) -> Any:
        """The JSON of GET /api/v1/`path`: bounded in size and time (the engine's own client, whose
        deadline holds for the whole answer: a Prometheus that trickles cannot hold `report`);
        RigctlError in one line."""
        where = f"Prometheus at {self.url}"
        parts = urlsplit(self.url)
        https = parts.scheme == "https"
        client = HttpGet(
            parts.hostname or "127.0.0.1", parts.port or (443 if https else 80), self.timeout, {}, tls=https, max_body=ANSWER_LIMIT
        )
        try:
            status, raw = client.get(f"{parts.path.rstrip('/')}/api/v1/{path}?{urlencode(params)}")
        except BodyTooLarge as exc:
            raise RigctlError(f"{where}: {exc}; ask for a shorter --since") from None
        except TimeoutError as exc:
            raise RigctlError(f"{where}: {exc}") from None
        except (OSError, ProtocolError) as exc:
            raise RigctlError(f"{where} did not answer: {exc}") from exc
        finally:
            client.close()
        chunks = [raw] if raw else []
        try:
            body = loads_strict(b"".join(chunks)) if chunks else None
        except (ValueError, RecursionError):
            body = None
        if body is None:
            raise RigctlError(f"{where} answered HTTP {status} without JSON")
        return body

    def rows(self, start: float, end: float, step: float | None = None) -> list[Row]:
        step = step or max(self.min_step, math.ceil((end - start) / MAX_POINTS))
        pattern = "|".join(sorted(_names()))
        keep = ", ".join(("__name__", *KEEP_LABELS))
        series = self._range(f'sum by ({keep}) ({{__name__=~"vllm:({pattern})"}})', start, end, step)
        series += self._range(f"{P}cache_config_info", start, end, step)
        energy = self._range(f"sum({ENERGY})", start, end, step)
        boots = sorted((r.when, r.profile) for r in read_history().records)
        return rows_of(series, energy, step, boots)


def rows_of(series: list[Series], energy_series: list[Series], step: float, boots: list[tuple[float, str]]) -> list[Row]:
    """The record's rows from checked range series: each step's samples put back together as a
    scrape and read by the code that reads a live /metrics."""
    energy = {t: v for _, points in energy_series for t, v in points if math.isfinite(v)}
    at: dict[float, Exposition] = defaultdict(Exposition)
    for metric, points in series:
        metric = dict(metric)
        name = metric.pop("__name__", None) or f"{P}cache_config_info"
        labels: Labels = tuple(sorted(metric.items()))
        for t, value in points:
            at[t].samples.setdefault(name, []).append((labels, value))
    times = sorted(at)
    out: list[Row] = []
    for before_t, after_t in itertools.pairwise(times):
        if after_t - before_t > step * 1.5:
            continue  # a gap: vLLM was not scraped (down, or a switch)
        before, after = snapshot(at[before_t], before_t), snapshot(at[after_t], after_t)
        profile, boot = _tag(boots, after_t, after.model_names)
        used = after.kv_usage if after.kv_usage is not None and math.isfinite(after.kv_usage) else None
        joules = None
        if before_t in energy and after_t in energy and energy[after_t] >= energy[before_t]:
            joules = (energy[after_t] - energy[before_t]) / 1000
        out.append(
            interval(
                before,
                after,
                profile,
                boot,
                seconds=after_t - before_t,
                kv_usage_max=used,
                kv_usage_seconds=(used or 0.0) * (after_t - before_t),
                running_max=after.running,
                waiting_max=after.waiting,
                energy_j=joules,
            )
        )
    return out


def _tag(boots: list[tuple[float, str]], t: float, models: tuple[str, ...]) -> tuple[str, str]:
    """The profile whose boot came last before t (its record is written once it serves)."""
    at = bisect_right(boots, (t, "\uffff"))
    if at == 0:
        name = f"(model {models[0]})" if models else "(before any rigctl boot)"
        return name, "prometheus"
    when, profile = boots[at - 1]
    return profile, f"{profile}@{when:.0f}"
