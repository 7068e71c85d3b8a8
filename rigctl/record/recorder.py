"""The recorder: while a profile serves, one row per interval (10 s by default) of what the
engine and the serving GPUs did, tagged with the profile and its boot.

Gauges (KV usage, running, waiting) are sampled five times an interval so a short peak is not
missed; counters and histograms are read as their increase between interval ends. When the
boot changes under it (a switch) the new boot is counted from its start; when the recorder
itself starts, from its first scrape.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rigctl.engine.client import EngineClient, EngineHTTPError
from rigctl.engine.metrics import SNAPSHOT_NAMES, EngineSnapshot, P, snapshot
from rigctl.engine.prom import ExpositionError, parse
from rigctl.gpu.holders import serving_gpus
from rigctl.gpu.sampler import RigSampler
from rigctl.record.rows import Row, interval
from rigctl.record.store import RecordWriter
from rigctl.serve.statefiles import ServerRecord, read_record

COMPACT_EVERY_S = 3600
GAUGE_NAMES = frozenset(P + n for n in ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc",
                                        "gpu_cache_usage_perc", "cache_config_info"))


def boot_key(record: ServerRecord) -> str:
    """What tags a boot's rows: its boot token, else the profile and start time."""
    return record.boot_id or f"{record.profile}@{record.started:.0f}"


@dataclass(frozen=True)
class Observation:
    profile: str
    boot: str
    snapshot: EngineSnapshot
    energy_j: float | None  # cumulative, the serving GPUs together


class ServingSource:
    """What serves now (server.json), scraped, with the energy counters of the GPUs it holds."""

    def __init__(self, sampler: RigSampler | None) -> None:
        self.sampler = sampler
        self._client: EngineClient | None = None
        self._url = ""

    def __call__(self, full: bool = True) -> Observation | None:
        """`full`: every family the row needs, and the GPUs' energy (an interval's ends); else the
        gauges alone (the samples between), which costs a fraction of a full read."""
        record = read_record()
        if record is None:
            return None
        if record.base_url != self._url:
            self.close()
            self._client, self._url = EngineClient(record.base_url, timeout=2.0), record.base_url
        assert self._client is not None
        try:
            snap = snapshot(parse(self._client.metrics_text(), names=SNAPSHOT_NAMES if full else GAUGE_NAMES),
                            time.time())
        except (EngineHTTPError, ExpositionError):
            return None
        energy = None
        if full and self.sampler is not None:
            rig = self.sampler.snapshot()
            held = set(serving_gpus(rig, record.pid))
            readings = [s.energy_j for s in rig.samples if s.index in held]
            energy = sum(r for r in readings if r is not None) if readings and None not in readings else None
        return Observation(record.profile, boot_key(record), snap, energy)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


@dataclass
class _Interval:
    begin: Observation
    started: float
    kv_max: float | None = None
    kv_seconds: float = 0.0
    running_max: float | None = None
    waiting_max: float | None = None
    last_gauge: float = field(default_factory=time.monotonic)

    def gauge(self, snap: EngineSnapshot) -> None:
        now = time.monotonic()
        if snap.kv_usage is not None:
            self.kv_max = max(self.kv_max or 0.0, snap.kv_usage)
            self.kv_seconds += snap.kv_usage * (now - self.last_gauge)
        self.last_gauge = now
        for name in ("running", "waiting"):
            value = getattr(snap, name)
            if value is not None:
                current = getattr(self, f"{name}_max")
                setattr(self, f"{name}_max", max(current or 0.0, value))


def _empty(like: EngineSnapshot) -> EngineSnapshot:
    return EngineSnapshot(like.timestamp, process_start=like.process_start)


class Recorder:
    def __init__(self, writer: RecordWriter, source: Callable[[bool], Observation | None], interval_s: float = 10.0,
                 on_row: Callable[[Row], None] = lambda row: None) -> None:
        self.writer, self.source, self.interval_s, self.on_row = writer, source, interval_s, on_row
        self.rows_written = 0

    def run(self, stop: threading.Event) -> None:
        current: _Interval | None = None
        last_compact = 0.0
        while not stop.is_set():
            if time.monotonic() - last_compact >= COMPACT_EVERY_S:
                self.writer.compact()
                last_compact = time.monotonic()
            due = current is None or time.monotonic() - current.started >= self.interval_s * 0.999
            seen = self.source(due)
            if seen is not None and current is not None and not due and seen.boot != current.begin.boot:
                seen = self.source(True)  # a new boot: its baseline needs the full read
            if seen is None:
                current = None  # nothing serves (or it does not answer): the next answer starts afresh
            elif current is None:
                current = _Interval(seen, time.monotonic())
            elif seen.boot != current.begin.boot:
                # a new boot while we watched: count it from its start, not from our first scrape of it
                current = _Interval(Observation(seen.profile, seen.boot, _empty(seen.snapshot), seen.energy_j),
                                    time.monotonic())
                current.gauge(seen.snapshot)
            else:
                current.gauge(seen.snapshot)
                if due:
                    self._write(current, seen)
                    current = _Interval(seen, time.monotonic())
            stop.wait(self.interval_s / 5)

    def _write(self, span: _Interval, end: Observation) -> None:
        energy = None
        if span.begin.energy_j is not None and end.energy_j is not None and end.energy_j >= span.begin.energy_j:
            energy = end.energy_j - span.begin.energy_j
        row = interval(span.begin.snapshot, end.snapshot, end.profile, end.boot,
                       seconds=time.monotonic() - span.started, kv_usage_max=span.kv_max,
                       kv_usage_seconds=span.kv_seconds, running_max=span.running_max,
                       waiting_max=span.waiting_max, energy_j=energy)
        self.writer.add(row)
        self.rows_written += 1
        self.on_row(row)
