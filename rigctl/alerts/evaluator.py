"""Snapshots in, alert changes out. Pure: fed what the dashboard or the recorder already read (the
engine's /metrics, what serves, the GPUs), it keeps one state per condition and says a change
only when a condition starts or stops firing, never on every poll.

Conditions that need time to mean something (a stall, a full KV cache, throttling) fire once they
have lasted their limit; the rates (queue time, preemptions) are judged over a sliding window of
the full scrapes (a gauge-only read between them carries no counters and is skipped for those).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from rigctl.alerts.limits import AlertLimits
from rigctl.alerts.model import Alert, AlertChange
from rigctl.engine.metrics import EngineSnapshot
from rigctl.gpu.model import RigSnapshot
from rigctl.gpu.nvml_codes import BENIGN_THROTTLE
from rigctl.state.serving import ServingStatus

POWER_CAP = "sw power cap"  # the power limit at work: its own alert (power-cap), sustained


@dataclass
class _Window:
    """(time, value) of a cumulative figure over the last `seconds`, plus the newest point older
    than that (the base the window's increase is measured from)."""

    seconds: float
    points: deque[tuple[float, float]] = field(default_factory=deque)

    def add(self, now: float, value: float) -> None:
        if self.points and value < self.points[-1][1]:
            self.points.clear()  # the counter went back: a restarted engine counts from zero
        self.points.append((now, value))
        while len(self.points) > 2 and self.points[1][0] <= now - self.seconds:
            self.points.popleft()

    def increase(self) -> tuple[float, float]:
        """(increase, seconds it took) across the window."""
        if len(self.points) < 2:
            return 0.0, 0.0
        (t0, v0), (t1, v1) = self.points[0], self.points[-1]
        return v1 - v0, t1 - t0


@dataclass
class AlertEvaluator:
    limits: AlertLimits = field(default_factory=AlertLimits)
    firing: dict[str, Alert] = field(default_factory=dict)
    profile: str | None = None  # what serves, as last seen: each change names it
    _engine: float | None = None  # the process_start of the engine being judged
    _tokens: float | None = None
    _tokens_moved: float = 0.0
    _waiting_since: float | None = None
    _kv_full_since: float | None = None
    _queue_sum: _Window = field(default_factory=lambda: _Window(60.0))
    _queue_count: _Window = field(default_factory=lambda: _Window(60.0))
    _preemptions: _Window = field(default_factory=lambda: _Window(60.0))
    _since: dict[str, float] = field(default_factory=dict)  # rig conditions: since when they hold
    _serving: str | None = None  # the profile last seen up and answering

    def __post_init__(self) -> None:
        for window in (self._queue_sum, self._queue_count, self._preemptions):
            window.seconds = self.limits.window_s

    # -- the bookkeeping ---------------------------------------------------------------------

    def _set(self, key: str, alert: Alert | None, now: float) -> list[AlertChange]:
        """`alert` fires (None: it does not): a change when that differs from before."""
        was = self.firing.get(key)
        if alert is not None:
            self.firing[key] = alert  # its text follows the figures; only the start is a change
            return [] if was else [AlertChange(alert, "fired", now, self.profile)]
        if was is None:
            return []
        del self.firing[key]
        return [AlertChange(was, "cleared", now, self.profile)]

    def _clear_engine(self, now: float) -> list[AlertChange]:
        changes: list[AlertChange] = []
        for key in ("stall", "queue", "preemptions", "kv-full"):
            changes += self._set(key, None, now)
        return changes

    def event(self, alert: Alert, now: float | None = None) -> AlertChange:
        """A one-off event (the supervisor restarted the engine), said as a change but never firing."""
        return AlertChange(alert, "event", time.time() if now is None else now, self.profile)

    # -- the engine's figures ----------------------------------------------------------------

    def on_engine(self, snap: EngineSnapshot | None, now: float | None = None) -> list[AlertChange]:
        """One scrape of the serving engine's /metrics (None: it did not answer; the engine's
        own conditions are then left to on_serving to judge)."""
        now = time.time() if now is None else now
        if snap is None or not snap.is_vllm:
            return []
        if snap.process_start != self._engine:  # another engine: its history starts now
            self._engine, self._tokens, self._tokens_moved = snap.process_start, None, now
            self._waiting_since = self._kv_full_since = None
            for window in (self._queue_sum, self._queue_count, self._preemptions):
                window.points.clear()
            changes = self._clear_engine(now) + self._set("hit-rate", None, now)
        else:
            changes = []
        waiting = snap.waiting or 0.0
        generated, prompted = snap.counter("generation_tokens"), snap.counter("prompt_tokens")
        if generated is not None and prompted is not None:  # a full read (gauge-only reads skip this)
            tokens = generated + prompted
            if self._tokens is None or tokens != self._tokens:
                self._tokens, self._tokens_moved = tokens, now
            queue = snap.histograms.get("queue")
            if queue is not None:
                self._queue_sum.add(now, queue.sum)
                self._queue_count.add(now, queue.count)
            preemptions = snap.counter("preemptions")
            if preemptions is not None:
                self._preemptions.add(now, preemptions)
        self._waiting_since = (self._waiting_since or now) if waiting > 0 else None
        changes += self._set("stall", self._stall(waiting, now), now)
        changes += self._set("queue", self._queue(waiting), now)
        changes += self._set("preemptions", self._preemption_storm(), now)
        self._kv_full_since = (self._kv_full_since or now) if snap.kv_full else None
        changes += self._set("kv-full", self._kv_full(snap, waiting, now), now)
        return changes

    def _stall(self, waiting: float, now: float) -> Alert | None:
        if self._waiting_since is None:
            return None
        stalled = now - max(self._waiting_since, self._tokens_moved)
        if stalled < self.limits.stall_s:
            return None
        return Alert(
            "stall",
            "stall",
            "admission stalled",
            f"{waiting:.0f} request(s) waiting and no token produced for {stalled:.0f} s while /health answers 200: "
            "the engine takes requests and serves none (`rigctl logs`; `rigctl restart` clears it)",
            "error",
        )

    def _queue(self, waiting: float) -> Alert | None:
        total, _ = self._queue_sum.increase()
        count, seconds = self._queue_count.increase()
        if count <= 0:  # no request admitted in the window: the queue alert holds while requests wait
            return self.firing.get("queue") if waiting > 0 else None
        mean = total / count
        if mean <= self.limits.queue_s:
            return None
        return Alert(
            "queue",
            "queue",
            "queue time high",
            f"requests waited {mean:.1f} s on average before they were scheduled (last {seconds:.0f} s, "
            f"{count:.0f} requests; limit {self.limits.queue_s:g} s): more traffic than --max-num-seqs and the KV pool admit",
            "warning",
        )

    def _preemption_storm(self) -> Alert | None:
        count, seconds = self._preemptions.increase()
        if count <= 0 or seconds <= 0:
            return None
        # over at least the whole window: the first seconds of a window never make a rate alone
        per_min = count * 60 / max(seconds, self.limits.window_s)
        if per_min < self.limits.preemptions_per_min:
            return None
        return Alert(
            "preemptions",
            "preemptions",
            "preemption storm",
            f"{count:.0f} requests preempted in {seconds:.0f} s ({per_min:.0f}/min): the KV pool is too small for "
            "the running requests, each preemption recomputes its prefill",
            "warning",
        )

    def _kv_full(self, snap: EngineSnapshot, waiting: float, now: float) -> Alert | None:
        since = self._kv_full_since
        if since is None or now - since < self.limits.kv_full_s:
            return None
        return Alert(
            "kv-full",
            "kv-full",
            "KV cache full",
            f"{snap.kv_usage_fullest:.0%} of the KV pool used for {now - since:.0f} s with {waiting:.0f} request(s) waiting",
            "warning",
        )

    def on_regression(self, text: str, now: float | None = None) -> list[AlertChange]:
        """The record found the switch to this boot collapsed the prefix hit rate; it fires until
        another engine serves."""
        alert = Alert("hit-rate", "hit-rate", "prefix hit rate fell", text, "warning")
        return self._set("hit-rate", alert, time.time() if now is None else now)

    # -- what serves ---------------------------------------------------------------------------

    def saw_serving(self, profile: str, now: float | None = None) -> list[AlertChange]:
        """`profile` served, though no poll may have seen it (the supervisor's restart booted it):
        the death before it is over (cleared), and its own death before the next poll is a death
        too, said anew, not an engine that was never up nor the old death still firing. Told after
        `on_serving`, whose look may be older than the restart."""
        self._serving = self.profile = profile
        return self._set("engine-died", None, time.time() if now is None else now)

    def on_serving(self, serving: ServingStatus, now: float | None = None) -> list[AlertChange]:
        """Engine up -> gone while no switch or stop of rigctl's own explains it: fires until
        something serves again (or rigctl itself stops or switches)."""
        now = time.time() if now is None else now
        state = serving.state
        if state is not None and state.status in ("switching", "stopping", "stopped"):
            self._serving = None  # rigctl itself took it down; the switch reports its own outcome
            return self._set("engine-died", None, now) + self._clear_engine(now)
        if serving.active_profile is not None:
            self._serving = self.profile = serving.active_profile
            return self._set("engine-died", None, now)
        if self._serving is None:
            return []
        changes = self._clear_engine(now)
        text = f"{self._serving}: {_why_down(serving)}"
        return changes + self._set("engine-died", Alert("engine-died", "engine-died", "engine died", text, "error"), now)

    # -- the GPUs --------------------------------------------------------------------------------

    def on_rig(self, snapshot: RigSnapshot) -> list[AlertChange]:
        now = snapshot.timestamp
        limits = {gpu.index: gpu.power_limit_w for gpu in snapshot.info.gpus}
        changes: list[AlertChange] = []
        for sample in snapshot.samples:
            index = sample.index
            lost = (
                Alert(
                    f"gpu{index}-lost",
                    "gpu-lost",
                    f"GPU{index} lost",
                    f"GPU{index} stopped answering NVML (GpuIsLost): reset or reboot",
                    "error",
                )
                if sample.lost
                else None
            )
            changes += self._set(f"gpu{index}-lost", lost, now)
            if sample.lost:
                continue  # a lost GPU says nothing of its clocks or power
            changes += self._set(f"gpu{index}-power", self._power(index, sample.power_w, limits.get(index), now), now)
            changes += self._set(f"gpu{index}-throttle", self._throttle(index, sample.throttle_reasons, now), now)
        return changes

    def _held(self, key: str, holds: bool, now: float) -> float | None:
        """Seconds `key` has held, or None when it does not."""
        if not holds:
            self._since.pop(key, None)
            return None
        return now - self._since.setdefault(key, now)

    def _power(self, index: int, watts: float | None, limit: float | None, now: float) -> Alert | None:
        at_cap = watts is not None and bool(limit) and watts >= self.limits.power_fraction * (limit or 0)
        held = self._held(f"gpu{index}-power", at_cap, now)
        if held is None or held < self.limits.power_s:
            return None
        return Alert(
            f"gpu{index}-power",
            "power-cap",
            f"GPU{index} at its power limit",
            f"GPU{index} has drawn {watts:.0f} W of its {limit:.0f} W limit for {held / 60:.1f} min: "
            "clocks are power-capped, benchmark figures reflect the cap",
            "warning",
        )

    def _throttle(self, index: int, reasons: tuple[str, ...] | None, now: float) -> Alert | None:
        slowing = sorted(set(reasons or ()) - BENIGN_THROTTLE - {POWER_CAP})
        held = self._held(f"gpu{index}-throttle", bool(slowing), now)
        if held is None or held < self.limits.throttle_s:
            return None
        return Alert(
            f"gpu{index}-throttle",
            "throttle",
            f"GPU{index} throttled",
            f"GPU{index} clocks held back by {', '.join(slowing)} for {held:.0f} s: check its cooling and power "
            "(every figure measured meanwhile is a throttled card's)",
            "warning",
        )


def _why_down(serving: ServingStatus) -> str:
    record, probe = serving.record, serving.probe
    if record is not None and not serving.process_alive:
        who = f"pid {record.pid}" if record.pid else record.launcher
        return f"the vLLM process is gone ({who}); `rigctl logs` shows its last lines"
    if probe is not None and probe.status:
        return f"/health answers HTTP {probe.status}"
    if probe is not None and probe.error:
        return f"/health does not answer: {probe.error}"
    return serving.summary
