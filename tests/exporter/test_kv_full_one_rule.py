""" "The KV cache is full" is one rule in every view: the health check (`rigctl status --check`),
the watch service's alert and the shipped Prometheus rule, judged by Prometheus's own evaluator
(promtool), all say it for the same /metrics and stay quiet for the same. The cases are the ones
the views once disagreed on: a data-parallel rig with one replica's pool full (a mean of the pools
hid it) and a pool hovering just below full under demand (a 0.99 line never saw it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigctl.alerts.evaluator import AlertEvaluator
from rigctl.alerts.limits import AlertLimits
from rigctl.engine.metrics import EngineSnapshot, snapshot
from rigctl.engine.prom import parse
from rigctl.serve.health import kv_full
from tests.exporter.test_rules_and_dashboard import needs_promtool, promtool_alert_test
from tests.faults.rig import Rig

T0 = 1_800_000_000.0
HELD_S = 60

# rig: ((kv usage, requests waiting) per engine, whether the KV cache is full with requests waiting)
CASES: dict[str, tuple[tuple[tuple[float, int], ...], bool]] = {
    "dp-one-full": (((0.96, 2), (0.20, 0)), True),
    "hovering": (((0.96, 3),), True),
    "well-used": (((1.0, 0),), False),
    "below": (((0.94, 5),), False),
    "dp-both-half": (((0.5, 4), (0.5, 4)), False),
}


def exposition(engines: tuple[tuple[float, int], ...], rig: str | None = None) -> list[tuple[str, float]]:
    """The engine's gauges as vLLM's /metrics has them, one (series, value) per engine."""
    out = []
    for index, (usage, waiting) in enumerate(engines):
        labels = f'engine="{index}",model_name="m"' + (f',rig="{rig}"' if rig else "")
        out += [
            (f"vllm:num_requests_running{{{labels}}}", 1.0),
            (f"vllm:num_requests_waiting{{{labels}}}", float(waiting)),
            (f"vllm:kv_cache_usage_perc{{{labels}}}", usage),
        ]
    return out


def scrape(engines: tuple[tuple[float, int], ...], t: float) -> EngineSnapshot:
    """One read at T0 + t of an engine that makes tokens (it is full, not stalled)."""
    text = "".join(f"{series} {value}\n" for series, value in exposition(engines))
    text += f'vllm:generation_tokens_total{{engine="0",model_name="m"}} {100 * (t + 1)}\n'
    text += 'vllm:prompt_tokens_total{engine="0",model_name="m"} 0\n'

    return snapshot(parse(text), T0 + t)


@pytest.mark.parametrize("rig", sorted(CASES))
def test_the_health_check_and_the_alert_say_the_same(rig: str) -> None:
    engines, full = CASES[rig]
    assert scrape(engines, 0).kv_full is full
    assert (kv_full(scrape(engines, 0)) is not None) is full
    evaluator = AlertEvaluator(AlertLimits(kv_full_s=HELD_S))
    fired = [c.alert.key for t in (0, HELD_S / 2, HELD_S + 1) for c in evaluator.on_engine(scrape(engines, t), T0 + t)]
    assert fired == (["kv-full"] if full else [])


@needs_promtool
def test_prometheus_fires_for_the_same_rigs(tmp_path: Path) -> None:
    home = Rig(tmp_path / "home")
    home.write_config(f"[alerts]\nkv_full_s = {HELD_S}\n")
    done = home.rigctl("exporter", "--rules")
    assert done.returncode == 0, done.stderr
    series = {name: f"{value:g}x12" for rig, (engines, _) in CASES.items() for name, value in exposition(engines, rig)}
    firing = {rig: "warning" for rig, (_, full) in CASES.items() if full}
    assert len(firing) == 2  # the two cases the views once disagreed on are among those that fire
    promtool_alert_test(tmp_path, done.stdout, series, "RigctlKvCacheFull", "2m", firing)
