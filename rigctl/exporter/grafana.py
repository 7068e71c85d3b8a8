"""A Grafana dashboard for rigs that run `rigctl exporter`, written from the exporter's families and
vLLM's metric names (rigctl/vllm/metric_names.py), so its queries follow a renamed series: per rig
(a variable), the GPUs, KV usage and pool, the prefix-cache hit rate, TTFT and TPOT, throughput,
power and J/token, and rigctl's switches as annotations."""

from __future__ import annotations

import json
from typing import Any

from rigctl.exporter import families as f
from rigctl.vllm.metric_names import COUNTERS, HISTOGRAMS, P

RIG = '{rig=~"$rig"}'


def _rate(name: str, window: str = "5m") -> str:
    return f"sum by (rig) (rate({name}{RIG}[{window}]))"


def _quantile(q: float, histogram: str) -> str:
    return f"histogram_quantile({q:g}, sum by (rig, le) (rate({P}{histogram}_bucket{RIG}[5m])))"


# (title, unit, [(legend, expr)])
PANELS: list[tuple[str, str, list[tuple[str, str]]]] = [
    (
        "GPU memory",
        "bytes",
        [
            ("{{rig}} GPU{{gpu}} used", f"{f.GPU_MEMORY_USED.name}{RIG}"),
            ("{{rig}} GPU{{gpu}} total", f"{f.GPU_MEMORY_TOTAL.name}{RIG}"),
        ],
    ),
    ("GPU power", "watt", [("{{rig}} GPU{{gpu}}", f"{f.GPU_POWER.name}{RIG}")]),
    (
        "KV cache",
        "percentunit",
        [("{{rig}} usage", f"max by (rig) ({P}kv_cache_usage_perc{RIG})")],
    ),
    (
        "KV pool and context",
        "none",
        [("{{rig}} pool", f"{f.KV_POOL.name}{RIG}"), ("{{rig}} max_model_len", f"{f.MAX_MODEL_LEN.name}{RIG}")],
    ),
    (
        "Prefix-cache hit rate",
        "percentunit",
        [("{{rig}}", f"{_rate(P + COUNTERS['prefix_hits'][0])} / {_rate(P + COUNTERS['prefix_queries'][0])}")],
    ),
    (
        "TTFT and TPOT (p50, p95)",
        "s",
        [
            ("{{rig}} TTFT p50", _quantile(0.5, HISTOGRAMS["ttft"][0])),
            ("{{rig}} TTFT p95", _quantile(0.95, HISTOGRAMS["ttft"][0])),
            ("{{rig}} TPOT p95", _quantile(0.95, HISTOGRAMS["tpot"][0])),
        ],
    ),
    ("Output tokens/s", "none", [("{{rig}}", _rate(P + COUNTERS["generation_tokens"][0], "1m"))]),
    (
        "Power and J/token",
        "none",
        [
            ("{{rig}} W (all GPUs)", _rate(f.exposed(f.GPU_ENERGY))),
            ("{{rig}} J/token", f"{_rate(f.exposed(f.GPU_ENERGY))} / {_rate(P + COUNTERS['generation_tokens'][0])}"),
        ],
    ),
    ("PCIe traffic", "Bps", [("{{rig}} GPU{{gpu}} {{direction}}", f"{f.GPU_PCIE.name}{RIG}")]),
    ("Alerts firing", "none", [("{{rig}} {{name}}", f"{f.ALERT.name}{RIG}")]),
]
SWITCHES = f"changes({f.LAST_SWITCH.name}{RIG}[2m]) > 0"  # labelled with how it ended and to what
STATE_CHANGES = f"changes({f.SWITCH_SINCE.name}{RIG}[2m]) > 0"  # a stop, a failure, a restart by the watch service


def expressions() -> list[str]:
    """Every query the dashboard makes (the tests ask a real Prometheus each)."""
    return [expr for _, _, targets in PANELS for _, expr in targets] + [SWITCHES, STATE_CHANGES]


def dashboard() -> dict[str, Any]:
    panels = []
    for number, (title, unit, targets) in enumerate(PANELS):
        panels.append(
            {
                "id": number + 1,
                "type": "timeseries",
                "title": title,
                "gridPos": {"h": 8, "w": 12, "x": 12 * (number % 2), "y": 8 * (number // 2)},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "targets": [
                    {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend} for i, (legend, expr) in enumerate(targets)
                ],
            }
        )
    variables = [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
        {
            "name": "rig",
            "type": "query",
            "label": "rig",
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "query": f"label_values({f.SERVING_UP.name}, rig)",
            "refresh": 2,
            "multi": True,
            "includeAll": True,
            "current": {"text": "All", "value": "$__all"},
        },
    ]
    return {
        "title": "rigctl: rigs",
        "uid": "rigctl-rigs",
        "tags": ["rigctl", "vllm"],
        "timezone": "browser",
        "schemaVersion": 39,
        "time": {"from": "now-24h", "to": "now"},
        "templating": {"list": variables},
        "annotations": {
            "list": [
                {
                    "name": "switches",
                    "datasource": {"type": "prometheus", "uid": "${datasource}"},
                    "enable": True,
                    "expr": SWITCHES,
                    "iconColor": "orange",
                    "titleFormat": "rigctl {{action}}: {{outcome}}",
                    "textFormat": "{{rig}}: to {{target}}",
                },
                {
                    "name": "rigctl state",
                    "datasource": {"type": "prometheus", "uid": "${datasource}"},
                    "enable": True,
                    "expr": STATE_CHANGES,
                    "iconColor": "purple",
                    "titleFormat": "rigctl: state changed",
                    "textFormat": "{{rig}}",
                },
            ]
        },
        "panels": panels,
    }


def dashboard_json() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"
