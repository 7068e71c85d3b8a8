"""The watch service's loop: every `interval / 5` seconds one poll of what the TUI's dashboard
polls (the GPUs, the engine's /metrics and /health, what serves: rigctl/monitor.py), and from
that one poll the record's samples, the alerts and the supervisor's decision. No second scrape.

It never exits for what passes: a TUI keeping the record is waited for (it stands aside within
seconds), a full disk is waited out with the rows kept in memory, a damaged record is said once
and the alerts go on without it. It exits for SIGTERM (the interval under way written first), for
another watch service, and for nothing else.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from typing import TypeVar

from rigctl.alerts.model import Alert, AlertChange
from rigctl.config import Settings
from rigctl.engine.poller import EngineState
from rigctl.gpu.sampler import RigSampler
from rigctl.observe.pipeline import LivePipeline
from rigctl.record.rows import Row
from rigctl.record.service_lock import ServiceLock
from rigctl.signals import Stop
from rigctl.watch.door_keeper import DoorKeeper
from rigctl.watch.supervisor import RestartResult, Supervisor, rig_down

T = TypeVar("T")


def drained(box: queue.SimpleQueue[T] | queue.Queue[T]) -> list[T]:
    """What `box` holds now, taken out (what another thread puts meanwhile waits for the next look)."""
    taken: list[T] = []
    while True:
        try:
            taken.append(box.get_nowait())
        except queue.Empty:
            return taken


class WatchService:
    def __init__(
        self,
        settings: Settings,
        sampler: RigSampler | None,
        say: Callable[[str], None],
        interval_s: float,
        retention_days: float,
        restart: Callable[[], RestartResult] | None = None,
        on_row: Callable[[Row], None] = lambda row: None,
    ) -> None:
        """`restart`: boots the last good profile, for `[supervise] restart` (None: never restarts)."""
        self.settings, self.say = settings, say
        self.interval_s = interval_s
        self.pipeline = LivePipeline(
            sampler, settings, say, service=True, on_row=on_row, interval_s=interval_s, retention_days=retention_days
        )
        self.events: queue.Queue[Alert] = queue.Queue()  # from the supervisor's thread
        self.supervisor = Supervisor(restart, settings.supervise_max_restarts, self.events.put) if restart else None
        self._down_said = False  # the rig-down event of this spell of nothing serving was sent
        self.door_keeper = DoorKeeper()  # the front door vLLM sits behind, brought back when it dies
        start_on_boot = settings.supervise_start_on_boot
        self.bring_up = settings.supervise_restart if start_on_boot is None else start_on_boot

    def step(self) -> list[AlertChange]:
        """One poll: the record's sample, the alerts judged, sent, and acted on."""
        pipeline = self.pipeline
        pipeline.look()
        tick = pipeline.monitor.tick(False)  # the GPUs (the engine is polled here, in this thread)
        for source, error in tick.errors:
            pipeline.keeper.notes.trouble(source, f"{source}: {error}")
        state, serving = pipeline.monitor.poll_engine_now()
        self._say_source(state)
        now = time.time()
        evaluator = pipeline.evaluator
        # the supervisor's events first, then what its restarts served: it puts a restart's served
        # profile before its event, so an event taken here never leaves its profile for a later step
        events = drained(self.events)
        served = drained(self.supervisor.served) if self.supervisor is not None else []
        changes = pipeline.judge(rig=tick.rig, engine=state, serving=serving, served=served, now=now)
        changes += [evaluator.event(alert, now) for alert in events]
        changes += [evaluator.event(alert, now) for alert in self.door_keeper.tick(serving)]
        down = rig_down(serving)
        died = any(a.kind == "engine-died" for a in evaluator.firing.values())
        if down is not None and not self._down_said and not died and not (self.supervisor and self.supervisor.restarting):
            starting = self.supervisor is not None and self.bring_up
            changes.append(
                evaluator.event(
                    Alert(
                        "rig-down",
                        "rig-down",
                        "rig down",
                        f"nothing serves: {down.why}; "
                        + (
                            f"starting {down.profile}"
                            if starting
                            else "[supervise] restart = true would start it"
                            if self.supervisor is None
                            else "[supervise] start_on_boot = false: left down"
                        ),
                        "error",
                    ),
                    now,
                )
            )
        self._down_said = down is not None
        pipeline.emit(changes)
        if self.supervisor is not None:
            for change in changes:
                if change.state == "fired" and change.alert.kind == "engine-died":
                    self.supervisor.engine_died(change.profile or "the last good profile")
            self.supervisor.tick(serving.active_profile, down, self.bring_up)
        return changes

    def _say_source(self, state: EngineState) -> None:
        """What is not an observation of vLLM (a damaged server.json, an answer that is not vLLM's
        exposition: a web page, an empty 200) is never a row of idle serving: said once."""
        notes = self.pipeline.keeper.notes
        problem = self.pipeline.monitor.endpoint_problem
        if problem is not None:
            notes.trouble("server.json", f"{problem}: not recording until it is rewritten")
            return
        notes.passed("server.json", "the server record is readable again")
        snap, url = state.snapshot, state.target.url if state.target else "the server"
        if state.error is None and snap is not None and not snap.is_vllm:
            notes.trouble("exposition", f"{url}/metrics answered, but not with vLLM's metrics: nothing is recorded while it does")
        elif state.error is None and snap is not None:
            notes.passed("exposition", f"{url}/metrics answers with vLLM's metrics again")

    def run(self, stop: Stop, announce: str = "") -> int:
        """Until `stop` is set; the rows written. ServiceRunning when another service watches;
        RecordTrouble when the record cannot be kept from the start (see RecordKeeper.open)."""
        lock = ServiceLock()
        try:
            self.pipeline.start_record(strict=True)
            if announce:
                self.say(announce)  # once it is sure to run: a refusal is the only line
            while not stop.is_set():
                self.step()
                stop.wait(self.interval_s / 5)
        finally:
            self.pipeline.close()
            lock.close()
        return self.pipeline.keeper.rows_written
