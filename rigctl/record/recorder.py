"""The recorder: while a profile serves, one row per interval (10 s by default) of what the
engine and the serving GPUs did, tagged with the profile and its boot.

Gauges (KV usage, running, waiting) are sampled several times an interval (five headless, every
dashboard poll in the TUI) so a short peak is not missed; counters and histograms are read as
their increase between interval ends. When the boot changes under it (a switch) the new boot is
counted from its start; when the recorder itself starts, from its first scrape.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rigctl.engine.client import EngineClient, EngineHTTPError
from rigctl.engine.metrics import SNAPSHOT_NAMES, EngineSnapshot, P
from rigctl.engine.prom import ExpositionError
from rigctl.gpu.holders import serving_gpus
from rigctl.gpu.model import RigSnapshot
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


def held_energy(rig: RigSnapshot | None, pid: int | None) -> float | None:
    """The energy counters (J since driver load) of the GPUs the server holds, summed; None
    when one of them does not say."""
    if rig is None:
        return None
    held = set(serving_gpus(rig, pid))
    readings = [s.energy_j for s in rig.samples if s.index in held]
    return sum(r for r in readings if r is not None) if readings and None not in readings else None


@dataclass(frozen=True)
class Observation:
    profile: str
    boot: str
    snapshot: EngineSnapshot
    # the serving GPUs' cumulative energy, read only at an interval's ends (it asks which
    # processes hold which GPU: not worth doing every sample)
    read_energy: Callable[[], float | None] = lambda: None


class ServingSource:
    """Headless: what serves now (server.json), scraped, with the GPUs' energy."""

    def __init__(self, sampler: RigSampler | None) -> None:
        self.sampler = sampler
        self._client: EngineClient | None = None
        self._url = ""

    def __call__(self, full: bool = True) -> Observation | None:
        """`full`: every family a row needs (an interval's ends); else the gauges alone (the
        samples between), which costs a fraction of a full read."""
        record = read_record()
        if record is None:
            return None
        if record.base_url != self._url:
            self.close()
            self._client, self._url = EngineClient(record.base_url, timeout=2.0), record.base_url
        assert self._client is not None
        try:
            snap = self._client.metrics(time.time(), SNAPSHOT_NAMES if full else GAUGE_NAMES)
        except (EngineHTTPError, ExpositionError):
            return None
        sampler = self.sampler
        return Observation(record.profile, boot_key(record), snap,
                           lambda: held_energy(sampler.snapshot(), record.pid) if sampler else None)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


@dataclass
class _Interval:
    begin: Observation
    started: float
    energy_j: float | None
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
    """The rows of what it is shown: `step` takes one observation (None: nothing serves, or it
    did not answer); headless, `run` polls a ServingSource five times an interval, in the TUI
    the dashboard's own engine poll feeds it (rigctl/record/background.py)."""

    def __init__(self, writer: RecordWriter, interval_s: float = 10.0,
                 on_row: Callable[[Row], None] = lambda row: None) -> None:
        self.writer, self.interval_s, self.on_row = writer, interval_s, on_row
        self.rows_written = 0
        self._current: _Interval | None = None
        self._compacted = -math.inf

    @property
    def due(self) -> bool:
        """The next observation ends an interval (or starts the first)."""
        current = self._current
        return current is None or time.monotonic() - current.started >= self.interval_s * 0.999

    def new_boot(self, seen: Observation) -> bool:
        return self._current is not None and seen.boot != self._current.begin.boot

    def step(self, seen: Observation | None) -> None:
        if time.monotonic() - self._compacted >= COMPACT_EVERY_S:
            self.writer.compact()
            self._compacted = time.monotonic()
        current, due = self._current, self.due
        if seen is None:
            self._current = None  # the next answer starts afresh
        elif current is None:
            self._current = _Interval(seen, time.monotonic(), seen.read_energy())
        elif seen.boot != current.begin.boot:
            # a new boot while we watched: count it from its start, not from our first sight of it
            self._current = _Interval(Observation(seen.profile, seen.boot, _empty(seen.snapshot)), time.monotonic(),
                                      seen.read_energy())
            self._current.gauge(seen.snapshot)
        else:
            current.gauge(seen.snapshot)
            if due:
                energy = seen.read_energy()
                self._write(current, seen, energy)
                self._current = _Interval(seen, time.monotonic(), energy)

    def run(self, source: ServingSource, stop: threading.Event) -> None:
        while not stop.is_set():
            seen = source(self.due)
            if seen is not None and self.new_boot(seen) and not self.due:
                seen = source(True)  # a new boot: its baseline needs the full read
            self.step(seen)
            stop.wait(self.interval_s / 5)

    def _write(self, span: _Interval, end: Observation, energy_now: float | None) -> None:
        energy = None
        if span.energy_j is not None and energy_now is not None and energy_now >= span.energy_j:
            energy = energy_now - span.energy_j
        row = interval(span.begin.snapshot, end.snapshot, end.profile, end.boot,
                       seconds=time.monotonic() - span.started, kv_usage_max=span.kv_max,
                       kv_usage_seconds=span.kv_seconds, running_max=span.running_max,
                       waiting_max=span.waiting_max, energy_j=energy)
        self.writer.add(row)
        self.rows_written += 1
        self.on_row(row)
