"""What a scrape of `rigctl exporter` answers, read at scrape time from the same parts `rigctl
status` and the TUI read (the GPU sampler, what serves, the boot history, rigctl's state file,
what the watch service says fires): nothing is polled between scrapes, and a scrape's figures
are one moment's."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rigctl.alerts.firing import read_firing
from rigctl.config import Settings
from rigctl.exporter import families as f
from rigctl.exporter.engine import engine_families
from rigctl.gpu.model import RigSnapshot
from rigctl.gpu.sampler import RigSampler
from rigctl.profiles.store import ProfileStore
from rigctl.record.regression_watch import CHECK_EVERY_S, hit_rate_fall
from rigctl.state.boots import BootRecord, read_all
from rigctl.state.journal import JournalReader
from rigctl.state.serving import ServingStatus, observe
from rigctl.state.statefiles import ServerRecord, read_state_or_none

PROCESSES_PER_GPU = 4  # the largest holders a GPU: a process label set that cannot grow without bound
MHZ = 1_000_000
KIB = 1024


@dataclass(frozen=True)
class ServedProfile:
    """What the serving profile says it serves, read once a server (not once a scrape)."""

    model: str
    served_model_name: str
    tp: str
    dp: str
    quantization: str


def served_profile(record: ServerRecord) -> ServedProfile:
    try:
        profile = ProfileStore().load(record.profile)
        vllm: dict[str, Any] = profile.vllm
        model = profile.model or ""
    except Exception:  # noqa: BLE001 - a profile edited or removed since its boot: the record still says what serves
        vllm, model = {}, ""
    served = ",".join(record.served_names) or str(vllm.get("served_model_name", ""))
    return ServedProfile(
        model,
        served,
        str(vllm.get("tensor_parallel_size", 1)),
        str(vllm.get("data_parallel_size", 1)),
        str(vllm.get("quantization", "") or ""),
    )


class RigCollector(Collector):
    """A prometheus_client collector: `collect()` is one scrape."""

    def __init__(self, sampler: RigSampler | None, settings: Settings, rig: str, engine: bool = False) -> None:
        """`engine`: re-export the served vLLM's own families too (rigctl exporter --engine)."""
        self.sampler = sampler
        self.engine = engine
        self.settings = settings
        self.rig = rig
        self._served: tuple[tuple[str, float] | None, ServedProfile | None] = (None, None)
        self._fell: tuple[str, float, bool] = ("", -CHECK_EVERY_S, False)
        self.journal = JournalReader()

    def describe(self) -> Iterator[Metric]:
        return iter(())  # the families' samples are known only at scrape time

    def collect(self) -> Iterator[Metric]:
        snapshot = self.sampler.snapshot() if self.sampler is not None else None
        serving = observe(self.settings)
        metrics = self._empty()
        if snapshot is not None:
            self._gpus(metrics, snapshot)
        self._serving(metrics, serving)
        self._switches(metrics)
        engine: list[Metric] = []
        if self.engine:
            record = serving.record
            found = engine_families(record.base_url, serving.api_key, self.rig) if record and serving.process_alive else None
            self._add(metrics, f.ENGINE_UP, (), 0.0 if found is None else 1.0)
            engine = found or []
        yield from metrics.values()
        yield from engine

    # -- the families -----------------------------------------------------------------

    def _empty(self) -> dict[str, Metric]:
        out: dict[str, Metric] = {}
        for family in f.FAMILIES:
            kind = CounterMetricFamily if family.kind == "counter" else GaugeMetricFamily
            out[family.name] = kind(family.name, family.help, labels=("rig", *family.labels))
        return out

    def _add(self, metrics: dict[str, Metric], family: f.Family, labels: tuple[str, ...], value: float | None) -> None:
        if value is None:
            return  # not measured: no sample, never a made-up 0
        metric = metrics[family.name]
        assert isinstance(metric, (GaugeMetricFamily, CounterMetricFamily))
        metric.add_metric([self.rig, *labels], float(value))

    def _gpus(self, metrics: dict[str, Metric], snapshot: RigSnapshot) -> None:
        for gpu in snapshot.info.gpus:
            sample = snapshot.sample_for(gpu.index)
            labels = (str(gpu.index), gpu.name)
            self._add(metrics, f.GPU_MEMORY_TOTAL, labels, gpu.memory_total)
            self._add(metrics, f.GPU_POWER_LIMIT, labels, gpu.power_limit_w)
            if sample is None:
                continue
            self._add(metrics, f.GPU_LOST, labels, 1.0 if sample.lost else 0.0)
            if sample.lost:
                continue
            used = None if sample.memory_used is None else sample.memory_used + (sample.memory_reserved or 0)
            self._add(metrics, f.GPU_MEMORY_USED, labels, used)
            self._add(metrics, f.GPU_POWER, labels, sample.power_w)
            self._add(metrics, f.GPU_ENERGY, labels, sample.energy_j)
            self._add(metrics, f.GPU_UTILIZATION, labels, None if sample.util_gpu is None else sample.util_gpu / 100)
            self._add(metrics, f.GPU_TEMPERATURE, labels, sample.temperature_c)
            self._add(metrics, f.GPU_SM_CLOCK, labels, None if sample.sm_clock is None else sample.sm_clock * MHZ)
            for reason in sample.throttle_reasons or ():
                self._add(metrics, f.GPU_THROTTLED, (*labels, reason), 1.0)
            for direction, kbps in (("rx", sample.pcie_rx_kbps), ("tx", sample.pcie_tx_kbps)):
                self._add(metrics, f.GPU_PCIE, (*labels, direction), None if kbps is None else kbps * 1000)
            for direction, kib in (("rx", sample.nvlink_rx_kib), ("tx", sample.nvlink_tx_kib)):
                self._add(metrics, f.GPU_NVLINK, (*labels, direction), None if kib is None else kib * KIB)
            ranked = sorted(sample.processes or (), key=lambda p: -(p.used_memory or 0))
            for process in ranked[:PROCESSES_PER_GPU]:
                who = (str(process.pid), (process.name or "?")[:32], process.vllm_role or "")
                self._add(metrics, f.GPU_PROCESS_MEMORY, (*labels, *who), process.used_memory)

    def _serving(self, metrics: dict[str, Metric], serving: ServingStatus) -> None:
        record, active = serving.record, serving.active_profile
        self._add(metrics, f.SERVING_UP, (), 1.0 if active else 0.0)
        if serving.door is not None:
            self._add(metrics, f.FRONT_DOOR_UP, (serving.door.listen,), 1.0)
        elif serving.door_down is not None:
            self._add(metrics, f.FRONT_DOOR_UP, (serving.door_down,), 0.0)
        if active and record is not None:
            served = self._served_profile(record)
            boot = _last_boot(read_all(), active)
            labels = (active, served.model, served.served_model_name, boot.vllm_version or "" if boot else "")
            self._add(metrics, f.SERVING_INFO, (*labels, served.tp, served.dp, served.quantization), 1.0)
            if boot is not None:
                self._add(metrics, f.KV_POOL, (active,), boot.kv_tokens)
                self._add(metrics, f.BOOT_SECONDS, (active,), boot.boot_seconds)
            self._add(metrics, f.MAX_MODEL_LEN, (active,), serving.probe.max_model_len if serving.probe else None)
            self._add(metrics, f.HIT_RATE_REGRESSION, (active,), 1.0 if self._hit_rate_fell(record) else 0.0)
        state = read_state_or_none()
        if state is not None:
            self._add(metrics, f.SWITCH_STATE, (state.status, state.profile or ""), 1.0)
            self._add(metrics, f.SWITCH_SINCE, (), state.since)
        firing = read_firing()
        self._add(metrics, f.WATCHED, (), 1.0 if firing is not None else 0.0)
        for alert in firing.alerts if firing else ():
            self._add(metrics, f.ALERT, (str(alert.get("kind", "?")), str(alert.get("severity", ""))), 1.0)

    def _switches(self, metrics: dict[str, Metric]) -> None:
        """From the switch journal: the counts by outcome, and what the last switch did."""
        summary = self.journal.summary()
        for (action, outcome), count in sorted(summary.counts.items()):
            self._add(metrics, f.SWITCHES, (action, outcome), count)
        last = summary.last_switch
        if last is None:
            return
        self._add(metrics, f.LAST_SWITCH, (last.action, last.status, last.target), last.when)
        self._add(metrics, f.LAST_SWITCH_SECONDS, (), last.seconds)
        self._add(metrics, f.LAST_DRAIN, ("finished",), last.finished)
        self._add(metrics, f.LAST_DRAIN, ("cut",), last.cut)
        self._add(metrics, f.LAST_DRAIN, ("running",), last.running)
        self._add(metrics, f.LAST_APPS, ("held",), last.held)
        self._add(metrics, f.LAST_APPS, ("refused",), last.refused)
        self._add(metrics, f.LAST_APPS_WAIT, (), last.held_longest_s)
        if last.verified is not None:
            self._add(metrics, f.LAST_VERIFIED, (last.target, (last.verify_failed or "")[:120]), 1.0 if last.verified else 0.0)

    def _hit_rate_fell(self, record: ServerRecord) -> bool:
        """The record's rule, asked at most once a minute a boot (it reads a week of two boots' rows,
        as the watch service's check does): a scrape every few seconds would read them each time."""
        now, (key, checked, fell) = time.monotonic(), self._fell
        if key != record.boot_key or now - checked >= CHECK_EVERY_S:
            fell = hit_rate_fall(record, self.settings) is not None
            self._fell = (record.boot_key, now, fell)
        return fell

    def _served_profile(self, record: ServerRecord) -> ServedProfile:
        key = (record.profile, record.started)
        cached_key, cached = self._served
        if cached is None or cached_key != key:
            cached = served_profile(record)
            self._served = (key, cached)
        return cached


def _last_boot(boots: list[BootRecord], profile: str) -> BootRecord | None:
    return next((b for b in reversed(boots) if b.profile == profile), None)
