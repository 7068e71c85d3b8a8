"""Polling a vLLM server for the dashboard: /metrics every tick, /health and /v1/models now and
then, the interval figures against the previous scrape. Runs in a worker thread; returns
immutable values. An endpoint that stops answering keeps the last figures, marked stale.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rigctl.engine.client import EngineClient, EngineHTTPError, Probe
from rigctl.engine.derive import IntervalFigures, interval
from rigctl.engine.metrics import SNAPSHOT_NAMES, EngineSnapshot, snapshot
from rigctl.engine.prom import ExpositionError, parse
from rigctl.gpu.model import GpuSample
from rigctl.serve.record import ServerRecord, read_record

PROBE_EVERY = 5  # ticks between /health + /v1/models checks while /metrics answers


@dataclass(frozen=True)
class EngineState:
    record: ServerRecord | None
    snapshot: EngineSnapshot | None  # the last good one (stale when `error` is set)
    figures: IntervalFigures | None
    probe: Probe | None
    error: str | None = None
    since: float | None = None  # when the endpoint stopped answering

    @property
    def stale(self) -> bool:
        return self.error is not None and self.snapshot is not None


class EnginePoller:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._client: EngineClient | None = None
        self._url: str | None = None
        self._previous: EngineSnapshot | None = None
        self._previous_gpus: tuple[GpuSample, ...] = ()
        self._last: EngineState = EngineState(None, None, None, None)
        self._tick = 0

    def _client_for(self, record: ServerRecord) -> EngineClient:
        if self._client is None or self._url != record.base_url:
            if self._client:
                self._client.close()
            self._client = EngineClient(record.base_url, record.api_key, timeout=1.5)
            self._url = record.base_url
            self._previous, self._tick = None, 0
        return self._client

    def poll(self, gpus: tuple[GpuSample, ...] = ()) -> EngineState:
        record = read_record()
        if record is None:
            since = self._last.since or self._clock()
            self._last = EngineState(self._last.record, self._last.snapshot, self._last.figures, None,
                                     error="no server running", since=since)
            self._previous = None
            return self._last
        client = self._client_for(record)
        probe = self._last.probe if self._last.record == record else None
        if self._tick % PROBE_EVERY == 0 or probe is None or not probe.healthy:
            probe = client.probe()
        self._tick += 1
        try:
            current = snapshot(parse(client.metrics_text(), names=SNAPSHOT_NAMES), self._clock())
        except (EngineHTTPError, ExpositionError) as exc:
            error = f"{record.base_url}/metrics: {exc}"
            since = self._last.since or self._clock()
            self._last = EngineState(record, self._last.snapshot, self._last.figures, probe, error, since)
            self._previous = None  # the next good scrape starts a fresh interval
            return self._last
        figures = None
        if self._previous is not None:
            serving = frozenset(s.index for s in gpus if any(p.is_vllm for p in s.processes or ())) or None
            figures = interval(self._previous, current, None, self._previous_gpus, gpus, serving)
        self._previous, self._previous_gpus = current, gpus
        self._last = EngineState(record, current, figures, probe)
        return self._last

    def close(self) -> None:
        if self._client:
            self._client.close()
