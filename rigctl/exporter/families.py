"""Every series `rigctl exporter` serves, defined once: the collector fills these, and the alerting
rules and the Grafana dashboard are written from the same names, so none of the three can drift.
Every family has the `rig` label too (the collector adds it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["gauge", "counter"]


@dataclass(frozen=True)
class Family:
    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()


GPU = ("gpu", "name")
GPU_MEMORY_USED = Family("rigctl_gpu_memory_used_bytes", "gauge", "GPU memory in use (driver-reserved included)", GPU)
GPU_MEMORY_TOTAL = Family("rigctl_gpu_memory_total_bytes", "gauge", "GPU memory in all", GPU)
GPU_POWER = Family("rigctl_gpu_power_watts", "gauge", "GPU board power draw", GPU)
GPU_POWER_LIMIT = Family("rigctl_gpu_power_limit_watts", "gauge", "GPU power limit in force", GPU)
GPU_ENERGY = Family("rigctl_gpu_energy_joules", "counter", "GPU energy since the driver loaded", GPU)
GPU_UTILIZATION = Family("rigctl_gpu_utilization_ratio", "gauge", "GPU busy fraction (NVML's utilization.gpu / 100)", GPU)
GPU_TEMPERATURE = Family("rigctl_gpu_temperature_celsius", "gauge", "GPU core temperature", GPU)
GPU_SM_CLOCK = Family("rigctl_gpu_sm_clock_hertz", "gauge", "GPU SM clock", GPU)
GPU_THROTTLED = Family("rigctl_gpu_throttled", "gauge", "1 for each clock throttle reason active now", (*GPU, "reason"))
GPU_PCIE = Family(
    "rigctl_gpu_pcie_bytes_per_second", "gauge", "PCIe traffic (NVML's throughput over its 20 ms window)", (*GPU, "direction")
)
GPU_NVLINK = Family("rigctl_gpu_nvlink_bytes", "counter", "NVLink payload over the active links", (*GPU, "direction"))
GPU_PROCESS_MEMORY = Family(
    "rigctl_gpu_process_memory_bytes",
    "gauge",
    "GPU memory a process holds (the largest few a GPU: the label set stays bounded)",
    (*GPU, "pid", "process", "vllm_role"),
)
GPU_LOST = Family("rigctl_gpu_lost", "gauge", "1 when the driver lost the GPU (a reset or reboot brings it back)", GPU)

SERVING_INFO = Family(
    "rigctl_serving_info",
    "gauge",
    "1 for the profile rigctl serves, with what it serves",
    ("profile", "model", "served_model_name", "vllm_version", "tp", "dp", "quantization"),
)
SERVING_UP = Family("rigctl_serving_up", "gauge", "1 when rigctl's server is alive and answers with its served name")
FRONT_DOOR_UP = Family(
    "rigctl_front_door_up",
    "gauge",
    "1 when the front door answers on the apps' address; 0 when vLLM sits behind a door that is gone (the apps are "
    "refused); no sample where no door stands",
    ("listen",),
)
KV_POOL = Family("rigctl_kv_pool_tokens", "gauge", "KV capacity at max_model_len, as the serving boot logged it", ("profile",))
MAX_MODEL_LEN = Family("rigctl_max_model_len", "gauge", "The context the server answers with on /v1/models", ("profile",))
BOOT_SECONDS = Family("rigctl_boot_duration_seconds", "gauge", "How long the serving boot took", ("profile",))
SWITCH_STATE = Family(
    "rigctl_switch_state_info",
    "gauge",
    "1 for what rigctl last did: serving, switching, stopping, stopped, failed or interrupted",
    ("status", "profile"),
)
SWITCH_SINCE = Family("rigctl_switch_state_since_timestamp_seconds", "gauge", "When rigctl's state last changed")
SWITCHES = Family(
    "rigctl_switches",
    "counter",
    "Serving actions ended (switch, bench arm, stop) by how: switched, rolled_back, rollback_failed, failed, refused, ...",
    ("action", "outcome"),
)
LAST_SWITCH = Family(
    "rigctl_last_switch_timestamp_seconds",
    "gauge",
    "When the last switch (or bench arm) ended, with how and to what",
    ("action", "outcome", "target"),
)
LAST_SWITCH_SECONDS = Family(
    "rigctl_last_switch_duration_seconds", "gauge", "How long the last switch took, its drain and verification included"
)
LAST_DRAIN = Family(
    "rigctl_last_switch_drain_requests",
    "gauge",
    "Requests of the last switch's drain: seen to finish through the front door (result=finished), running or waiting "
    "by vLLM's gauges when it began (result=running), still running when the server stopped (result=cut)",
    ("result",),
)
LAST_APPS = Family(
    "rigctl_last_switch_apps_requests",
    "gauge",
    "What the apps saw of the last switch through the front door: requests held (result=held) and answered 503 "
    "(result=refused); no sample without a front door",
    ("result",),
)
LAST_APPS_WAIT = Family(
    "rigctl_last_switch_apps_longest_hold_seconds", "gauge", "The longest any request waited at the front door in the last switch"
)
LAST_VERIFIED = Family(
    "rigctl_last_switch_verified",
    "gauge",
    "1 when the last switch's new boot passed what [verify] asks, 0 when it failed (no sample: not verified)",
    ("target", "failed"),
)
ALERT = Family("rigctl_alert", "gauge", "1 for each alert the watch service says fires", ("name", "severity"))
HIT_RATE_REGRESSION = Family(
    "rigctl_hit_rate_regression",
    "gauge",
    "1 when the switch to what serves collapsed the prefix-cache hit rate (by the serving record)",
    ("profile",),
)
ENGINE_UP = Family(
    "rigctl_engine_metrics_up",
    "gauge",
    "With --engine: 1 when the served vLLM's /metrics was read and re-exported at this scrape, 0 when not",
)
WATCHED = Family("rigctl_watched", "gauge", "1 when a watcher (rigctl watch, or a TUI keeping the record) judges alerts")

FAMILIES: tuple[Family, ...] = (
    GPU_MEMORY_USED,
    GPU_MEMORY_TOTAL,
    GPU_POWER,
    GPU_POWER_LIMIT,
    GPU_ENERGY,
    GPU_UTILIZATION,
    GPU_TEMPERATURE,
    GPU_SM_CLOCK,
    GPU_THROTTLED,
    GPU_PCIE,
    GPU_NVLINK,
    GPU_PROCESS_MEMORY,
    GPU_LOST,
    SERVING_INFO,
    SERVING_UP,
    FRONT_DOOR_UP,
    KV_POOL,
    MAX_MODEL_LEN,
    BOOT_SECONDS,
    SWITCH_STATE,
    SWITCH_SINCE,
    SWITCHES,
    LAST_SWITCH,
    LAST_SWITCH_SECONDS,
    LAST_DRAIN,
    LAST_APPS,
    LAST_APPS_WAIT,
    LAST_VERIFIED,
    ALERT,
    HIT_RATE_REGRESSION,
    WATCHED,
    ENGINE_UP,
)


def exposed(family: Family) -> str:
    """The series name a scrape shows: prometheus_client adds `_total` to a counter."""
    return family.name + "_total" if family.kind == "counter" else family.name
