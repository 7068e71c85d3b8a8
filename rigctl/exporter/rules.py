"""Prometheus alerting rules for the alerts of the unattended rig (rigctl/alerts/), written from
the exporter's families and vLLM's metric names (rigctl/vllm/metric_names.py) with the owner's
[alerts] thresholds, so a renamed series is an edit in one place. Printed as JSON, which
Prometheus reads as the YAML it is a subset of (no YAML library, nothing to escape by hand).

vLLM's own series carry the `rig` label when the owner's scrape config gives each rig's vLLM job
that label (a relabel), the same label the exporter puts on its own."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rigctl.config import Settings
from rigctl.engine.metrics import KV_FULL_FRACTION
from rigctl.exporter import families as f
from rigctl.vllm.metric_names import COUNTERS, HISTOGRAMS, P

HARMFUL_THROTTLE = "hw slowdown|sw thermal|hw thermal|hw power brake"  # gpu/nvml_codes.py's names; idle and app clocks are benign


@dataclass(frozen=True)
class Rule:
    name: str
    expr: str
    for_s: float
    severity: str
    summary: str

    def to_json(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.for_s:
            rule["for"] = f"{round(self.for_s)}s"
        rule["labels"] = {"severity": self.severity}
        rule["annotations"] = {"summary": self.summary}
        return rule


def _vllm(name: str) -> str:
    return P + name


def rules(settings: Settings) -> list[Rule]:
    waiting = f"sum by (rig) ({_vllm('num_requests_waiting')})"
    generated = f"sum by (rig) (rate({_vllm(COUNTERS['generation_tokens'][0])}[2m]))"
    queue = _vllm(HISTOGRAMS["queue"][0])
    window = f"{round(settings.alerts_window)}s"
    return [
        Rule(
            "RigctlEngineDown",
            f'{f.SERVING_UP.name} == 0 and on (rig) {f.SWITCH_STATE.name}{{status="serving"}} == 1',
            60,
            "error",
            "{{ $labels.rig }}: the server rigctl started is not answering, and rigctl did not stop or switch it",
        ),
        Rule(
            "RigctlNothingServes",
            f'{f.SERVING_UP.name} == 0 and on (rig) {f.SWITCH_STATE.name}{{status=~"failed|interrupted"}} == 1',
            0,
            "error",
            "{{ $labels.rig }}: a switch failed and so did its rollback (or was left): nothing serves",
        ),
        Rule(
            "RigctlFrontDoorDown",
            f"{f.FRONT_DOOR_UP.name} == 0",
            30,
            "error",
            "{{ $labels.rig }}: the front door on {{ $labels.listen }} is gone and vLLM sits behind it: every app is refused",
        ),
        Rule(
            "RigctlAdmissionStalled",
            f"{waiting} > 0 and {generated} == 0",
            settings.alerts_stall,
            "error",
            "{{ $labels.rig }}: requests wait and no token comes out (vLLM may still say healthy)",
        ),
        Rule(
            "RigctlQueueTimeHigh",
            f"sum by (rig) (rate({queue}_sum[{window}])) / sum by (rig) (rate({queue}_count[{window}]))"
            f" > {settings.alerts_queue:g}",
            60,
            "warning",
            "{{ $labels.rig }}: requests wait {{ $value | humanizeDuration }} on average before they run",
        ),
        Rule(
            "RigctlKvCacheFull",
            f"max by (rig) ({_vllm('kv_cache_usage_perc')}) >= {KV_FULL_FRACTION:g} and {waiting} > 0",
            settings.alerts_kv_full,
            "warning",
            "{{ $labels.rig }}: the KV cache is full with requests waiting",
        ),
        Rule(
            "RigctlGpuThrottled",
            f'max by (rig, gpu) ({f.GPU_THROTTLED.name}{{reason=~"{HARMFUL_THROTTLE}"}}) == 1',
            settings.alerts_throttle,
            "warning",
            "{{ $labels.rig }} GPU{{ $labels.gpu }}: clocks held down (thermal or hardware slowdown)",
        ),
        Rule(
            "RigctlGpuLost",
            f"{f.GPU_LOST.name} == 1",
            0,
            "error",
            "{{ $labels.rig }} GPU{{ $labels.gpu }}: the driver lost the GPU (a reset or reboot brings it back)",
        ),
        Rule(
            "RigctlHitRateCollapsed",
            f"{f.HIT_RATE_REGRESSION.name} == 1",
            0,
            "warning",
            "{{ $labels.rig }}: the switch to {{ $labels.profile }} collapsed the prefix-cache hit rate",
        ),
        Rule(
            "RigctlAlert",
            f"{f.ALERT.name} == 1",
            0,
            "warning",
            "{{ $labels.rig }}: rigctl watch says {{ $labels.name }} fires",
        ),
    ]


def rules_file(settings: Settings) -> str:
    """The rule file: one group, every rule."""
    group = {"name": "rigctl", "rules": [rule.to_json() for rule in rules(settings)]}
    return json.dumps({"groups": [group]}, indent=2) + "\n"
