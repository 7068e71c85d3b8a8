"""Every rig the owner's Prometheus knows, read back from the series `rigctl exporter` serves (and
vLLM's, where the scrape config labels them with the rig): what serves, its pool and usage, the hit
rate, tok/s, power, the alerts firing and rigctl's last state change. Instant queries, one per
figure across all rigs, so ten rigs cost what one does."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rigctl.config import Settings
from rigctl.errors import RigctlError
from rigctl.exporter import families as f
from rigctl.record.prometheus import PrometheusSource
from rigctl.vllm.metric_names import COUNTERS, P


@dataclass
class RigRow:
    rig: str
    up: bool = False  # rigctl's server alive and answering
    profile: str | None = None
    model: str | None = None
    served_model_name: str | None = None
    tp: str | None = None
    dp: str | None = None
    vllm_version: str | None = None
    kv_pool_tokens: float | None = None
    max_model_len: float | None = None
    kv_usage: float | None = None
    hit_rate: float | None = None  # over the last 5 minutes
    tok_per_s: float | None = None  # output tokens, over the last minute
    power_w: float | None = None  # every GPU of the rig
    state: str | None = None  # rigctl's last state: serving, switching, failed, ...
    state_since: float | None = None
    alerts: list[str] = field(default_factory=list)
    last_switch: str | None = None  # "to alt: switched" (the journal's last ending)
    last_switch_at: float | None = None
    in_prometheus: bool = True  # False: only named in [rigs.NAME], no series of its exporter seen
    ssh: str | None = None  # [rigs.NAME] ssh: this terminal can drive it (rigctl --rig NAME)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _rate(counter: str, window: str) -> str:
    return f"sum by (rig) (rate({P}{counter}[{window}]))"


FIGURES: dict[str, str] = {
    "kv_pool_tokens": f"max by (rig) ({f.KV_POOL.name})",
    "max_model_len": f"max by (rig) ({f.MAX_MODEL_LEN.name})",
    "kv_usage": f"max by (rig) ({P}kv_cache_usage_perc)",
    "hit_rate": f"{_rate(COUNTERS['prefix_hits'][0], '5m')} / {_rate(COUNTERS['prefix_queries'][0], '5m')}",
    "tok_per_s": _rate(COUNTERS["generation_tokens"][0], "1m"),
    "power_w": f"sum by (rig) ({f.GPU_POWER.name})",
    "state_since": f"max by (rig) ({f.SWITCH_SINCE.name})",
}


def read_rigs(source: PrometheusSource) -> list[RigRow]:
    """Every rig with a `rigctl_serving_up` series, sorted by name."""
    rows: dict[str, RigRow] = {}
    for labels, value in source.instant(f.SERVING_UP.name):
        rig = labels.get("rig", "")
        rows[rig] = RigRow(rig, up=value == 1)
    for labels, _ in source.instant(f"{f.SERVING_INFO.name} == 1"):
        row = rows.get(labels.get("rig", ""))
        if row is not None:
            row.profile, row.model = labels.get("profile"), labels.get("model")
            row.served_model_name, row.vllm_version = labels.get("served_model_name"), labels.get("vllm_version")
            row.tp, row.dp = labels.get("tp"), labels.get("dp")
    for name, query in FIGURES.items():
        for labels, value in source.instant(query):
            row = rows.get(labels.get("rig", ""))
            if row is not None and value == value:  # NaN: a rate over nothing (no traffic)
                setattr(row, name, value)
    for labels, _ in source.instant(f"{f.SWITCH_STATE.name} == 1"):
        row = rows.get(labels.get("rig", ""))
        if row is not None:
            row.state = labels.get("status")
    for labels, value in source.instant(f.LAST_SWITCH.name):
        row = rows.get(labels.get("rig", ""))
        if row is not None:
            row.last_switch = f"{labels.get('action', 'switch')} to {labels.get('target', '?')}: {labels.get('outcome', '?')}"
            row.last_switch_at = value
    for labels, _ in source.instant(f"{f.ALERT.name} == 1"):
        row = rows.get(labels.get("rig", ""))
        if row is not None:
            row.alerts.append(labels.get("name", "?"))
    for labels, _ in source.instant('ALERTS{alertstate="firing", alertname=~"Rigctl.*"}'):
        row = rows.get(labels.get("rig", ""))
        if row is not None and labels.get("alertname") not in row.alerts and labels.get("alertname") != "RigctlAlert":
            row.alerts.append(labels.get("alertname", "?"))
    return [rows[name] for name in sorted(rows)]


@dataclass
class RigsView:
    rows: list[RigRow]
    problem: str | None  # why the figures are missing: no [prometheus] url, or it did not answer


def rigs_view(settings: Settings) -> RigsView:
    """The rigs Prometheus knows, joined by name with those `[rigs.NAME]` can drive (a rig named
    only there is shown too, without figures): the TUI's Rigs screen."""
    rows: list[RigRow] = []
    problem = None
    if not settings.prometheus_url:
        problem = "no [prometheus] url in config.toml: the rigs' figures come from the Prometheus scraping their exporters"
    else:
        try:
            rows = read_rigs(PrometheusSource(settings.prometheus_url, timeout=settings.prometheus_timeout))
        except RigctlError as exc:
            problem = str(exc)
    by_name = {row.rig: row for row in rows}
    for remote in settings.rigs:
        row = by_name.get(remote.name)
        if row is None:
            row = by_name[remote.name] = RigRow(remote.name, in_prometheus=False)
        row.ssh = remote.ssh or None
    return RigsView([by_name[name] for name in sorted(by_name)], problem)
