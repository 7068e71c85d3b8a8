"""`rigctl exporter --engine`: the served vLLM's own /metrics, read at the scrape and served again
with the `rig` label on every sample, so one scrape job covers a rig (no second job to label).
Parsed with prometheus_client's own parser: the families come back whole (their type, help and
every sample, histograms included), exactly as vLLM wrote them."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families

from rigctl.engine.client import EngineClient, EngineHTTPError

TIMEOUT_S = 2.0  # a scrape waits for this at most: Prometheus's own scrape timeout is 10 s


def relabelled(text: str, rig: str) -> Iterator[Metric]:
    """Each family of an exposition, every sample with `rig` added (ValueError: not an exposition)."""
    for family in text_string_to_metric_families(text):
        out = Metric(family.name, family.documentation, family.type, family.unit)
        for sample in family.samples:
            out.add_sample(sample.name, {**sample.labels, "rig": rig}, sample.value, sample.timestamp, sample.exemplar)
        yield out


def engine_families(base_url: str, api_key: str | None, rig: str) -> list[Metric] | None:
    """The engine's families relabelled; None when its /metrics could not be read or parsed."""
    try:
        with EngineClient(base_url, api_key, timeout=TIMEOUT_S) as client:
            text = client.metrics_text()
        return list(relabelled(text, rig))
    except (EngineHTTPError, ValueError):
        return None
