"""Polling a vLLM server for the dashboard: /metrics every tick, /health and /v1/models now and
then, the interval figures against the previous scrape. Returns immutable values. An
endpoint that stops answering keeps the last figures, marked stale.

The caller says which endpoint to poll (the engine layer reads engines; it does not know
how rigctl started one).
"""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rigctl.engine.client import EngineClient, EngineHTTPError, Probe
from rigctl.engine.derive import IntervalFigures, interval, latency_quantiles
from rigctl.engine.metrics import EngineSnapshot
from rigctl.engine.prom import ExpositionError
from rigctl.gpu.holders import serving_gpus
from rigctl.gpu.model import GpuSample

PROBE_EVERY = 5  # ticks between /health + /v1/models checks while /metrics answers
# TTFT and TPOT are observed once per request, when it finishes: over one second most
# intervals hold none even while a dozen requests decode. Quantiles come from this window.
LATENCY_WINDOW = 30.0
LOOPBACK_TIMEOUT = 0.8  # s: a local vLLM answers /metrics in milliseconds; a stuck one must not hold a tick


@dataclass(frozen=True)
class Endpoint:
    url: str
    label: str  # what the panel calls it: the profile it serves
    api_key: str | None = field(default=None, repr=False)
    pid: int | None = None  # the server's process, when rigctl started it: whose GPUs it holds


@dataclass(frozen=True)
class EngineState:
    target: Endpoint | None
    snapshot: EngineSnapshot | None  # the last good one (stale when `error` is set)
    figures: IntervalFigures | None
    probe: Probe | None
    error: str | None = None
    since: float | None = None  # when the endpoint stopped answering

    @property
    def stale(self) -> bool:
        return self.error is not None and self.snapshot is not None


def _timeout_for(url: str) -> float:
    local = any(host in url for host in ("//127.", "//localhost", "//[::1]"))
    return LOOPBACK_TIMEOUT if local else 2.0


class EnginePoller:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._client: EngineClient | None = None
        self._target: Endpoint | None = None
        self._previous: EngineSnapshot | None = None
        self._window: collections.deque[EngineSnapshot] = collections.deque()
        self._previous_gpus: tuple[GpuSample, ...] = ()
        self._last: EngineState = EngineState(None, None, None, None)
        self._tick = 0
        # which GPUs serve, asked again only when who holds which GPU changes: the rule walks the
        # server's process family (a scan of /proc), too dear once a second beside vLLM
        self._serving_key: tuple[int | None, frozenset[tuple[int, int]]] | None = None
        self._serving: frozenset[int] | None = None

    def _client_for(self, target: Endpoint) -> EngineClient:
        if self._client is None or self._target is None or (self._target.url, self._target.api_key) != (target.url, target.api_key):
            if self._client:
                self._client.close()
            self._client = EngineClient(target.url, target.api_key, timeout=_timeout_for(target.url))
            self._previous, self._tick = None, 0
            self._window.clear()
        self._target = target
        return self._client

    def _serving_of(self, gpus: tuple[GpuSample, ...], pid: int | None) -> frozenset[int] | None:
        key = (pid, frozenset((s.index, p.pid) for s in gpus for p in s.processes or ()))
        if key != self._serving_key:
            self._serving_key, self._serving = key, frozenset(serving_gpus(gpus, pid)) or None
        return self._serving

    def unavailable(self, error: str) -> EngineState:
        """No endpoint to poll (nothing serves, or its record is damaged): say so, keep the last figures."""
        since = self._last.since or self._clock()
        self._last = EngineState(self._last.target, self._last.snapshot, self._last.figures, None, error=error, since=since)
        self._previous = None
        self._window.clear()
        return self._last

    def poll(self, target: Endpoint | None, gpus: tuple[GpuSample, ...] = ()) -> EngineState:
        if target is None:
            return self.unavailable("no server running")
        client = self._client_for(target)
        probe = self._last.probe if self._last.target == target else None
        if self._tick % PROBE_EVERY == 0 or probe is None or not probe.healthy:
            probe = client.probe()
        self._tick += 1
        try:
            current = client.metrics(self._clock())
        except (EngineHTTPError, ExpositionError) as exc:
            error = f"{target.url}/metrics: {exc}"
            since = self._last.since or self._clock()
            self._last = EngineState(target, self._last.snapshot, self._last.figures, probe, error, since)
            self._previous = None  # the next good scrape starts a fresh interval
            self._window.clear()
            return self._last
        figures = None
        if self._previous is not None:
            serving = self._serving_of(gpus, target.pid)
            figures = interval(self._previous, current, None, self._previous_gpus, gpus, serving)
            if figures.restarted:
                self._window.clear()
            figures = self._over_window(figures, current)
        self._window.append(current)
        self._previous, self._previous_gpus = current, gpus
        self._last = EngineState(target, current, figures, probe)
        return self._last

    def _over_window(self, figures: IntervalFigures, current: EngineSnapshot) -> IntervalFigures:
        while len(self._window) > 1 and current.timestamp - self._window[1].timestamp >= LATENCY_WINDOW:
            self._window.popleft()
        if not self._window:
            return figures
        start = self._window[0]
        return dataclasses.replace(
            figures, latency=latency_quantiles(start, current), latency_seconds=current.timestamp - start.timestamp
        )

    def close(self) -> None:
        if self._client:
            self._client.close()
