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

from rigctl.alerts.evaluator import AlertEvaluator
from rigctl.alerts.limits import AlertLimits
from rigctl.alerts.model import Alert, AlertChange
from rigctl.config import Settings
from rigctl.engine.poller import EngineState
from rigctl.errors import RigctlError
from rigctl.gpu.sampler import RigSampler
from rigctl.monitor import Monitor
from rigctl.record.recorder import Notes, Observation, Recorder
from rigctl.record.regression_watch import RegressionWatch
from rigctl.record.rows import Row
from rigctl.record.service_lock import ServiceLock
from rigctl.record.store import RecorderBusy, RecordTrouble, RecordWriter
from rigctl.signals import Stop
from rigctl.watch.sink import AlertSink
from rigctl.watch.supervisor import RestartResult, Supervisor, rig_down

REOPEN_MAX_S = 60.0  # trouble opening the record is tried again at most this far apart
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
        self.settings, self.say, self.interval_s, self.retention_days = settings, say, interval_s, retention_days
        self.on_row = on_row
        self.notes = Notes(say)
        self.monitor = Monitor(sampler, settings)
        self.monitor.record_to = self._observed
        self.evaluator = AlertEvaluator(AlertLimits.of(settings))
        self.regressions = RegressionWatch(settings)
        self.sink = AlertSink(settings, say, self._record_change)
        self.events: queue.Queue[Alert] = queue.Queue()  # from the supervisor's thread
        self.supervisor = Supervisor(restart, settings.supervise_max_restarts, self.events.put) if restart else None
        self.writer: RecordWriter | None = None
        self.recorder: Recorder | None = None
        self.rows_written = 0
        self._pending: list[AlertChange] = []  # changes seen while the record could not be written
        self._next_open = 0.0
        self._open_wait = 1.0
        self._found: list[str] = []  # regressions the rows just written show
        self._down_said = False  # the rig-down event of this spell of nothing serving was sent
        start_on_boot = settings.supervise_start_on_boot
        self.bring_up = settings.supervise_restart if start_on_boot is None else start_on_boot

    # -- the record ---------------------------------------------------------------------------

    def _open(self, strict: bool = False) -> None:
        """The record's writer, when it can be had: a TUI holding it stands aside within seconds
        (it sees the service's lock); trouble is said once and tried again with a backoff.
        `strict` (the first try): trouble that will not pass (a read-only dir, a record of another
        schema) is raised, one line and exit 1, so the owner enabling the unit sees it at once."""
        if self.writer is not None or time.monotonic() < self._next_open:
            return
        try:
            self.writer = RecordWriter(retention_days=self.retention_days)
        except RecorderBusy as exc:
            self.notes.trouble("open", f"{exc}: it stands aside for this service; waiting")
            self._next_open = time.monotonic() + 0.5
            return
        except (OSError, RigctlError) as exc:
            passing = isinstance(exc, RecordTrouble) and exc.passing
            if strict and not passing:
                raise
            self.notes.trouble(
                "open",
                f"the record cannot be opened: {exc}; "
                + ("trying again" if passing else "the alerts go on without it; trying again")
                + f" (every {REOPEN_MAX_S:.0f} s at most)",
            )
            self._next_open = time.monotonic() + self._open_wait
            self._open_wait = min(REOPEN_MAX_S, self._open_wait * 2)
            return
        self._open_wait = 1.0
        self.notes.clear("open")
        self.say(f"recording to {self.writer.path} every {self.interval_s:g} s")
        self.recorder = Recorder(self.writer, self.interval_s, self._row, self.notes)
        pending, self._pending = self._pending, []
        for change in pending:
            self._record_change(change)

    def _lost_record(self, exc: RigctlError) -> None:
        self.notes.trouble("open", f"the record stopped: {exc}; the alerts go on without it")
        self._close_record()
        self._next_open = time.monotonic() + REOPEN_MAX_S

    def _close_record(self) -> None:
        recorder, writer = self.recorder, self.writer
        self.recorder = self.writer = None
        try:
            if recorder is not None:
                recorder.finish()
                self.rows_written += recorder.rows_written
        except RigctlError as exc:
            self.say(f"the last interval could not be written: {exc}")
        if writer is not None:
            writer.close()

    def _observed(self, seen: Observation | None) -> None:
        """Each engine poll's observation, as the TUI's recorder gets it (Monitor.record_to)."""
        if self.recorder is None:
            return
        try:
            self.recorder.step(seen)
        except RigctlError as exc:
            self._lost_record(exc)

    def _row(self, row: Row) -> None:
        self.on_row(row)
        found = self.regressions.after(row)
        if found is not None:
            self._found.append(found.describe())

    def _record_change(self, change: AlertChange) -> None:
        if self.writer is None:
            self._pending = [*self._pending[-999:], change]  # written once the record opens
            return
        try:
            self.writer.add_event(change)
        except RecordTrouble as exc:
            if not exc.passing:
                self._lost_record(exc)
            self._pending = [*self._pending[-999:], change]

    # -- the loop ----------------------------------------------------------------------------------

    def step(self) -> list[AlertChange]:
        """One poll: the record's sample, the alerts judged, sent, and acted on."""
        self._open()
        tick = self.monitor.tick(False)  # the GPUs (the engine is polled here, in this thread)
        for source, error in tick.errors:
            self.notes.trouble(source, f"{source}: {error}")
        state, serving = self.monitor.poll_engine_now()
        self._say_source(state)
        now = time.time()
        evaluator = self.evaluator
        # the supervisor's events first, then what its restarts served: it puts a restart's served
        # profile before its event, so an event taken here never leaves its profile for a later step
        events = drained(self.events)
        changes = evaluator.on_engine(state.snapshot if state.error is None else None, now)
        changes += evaluator.on_serving(serving, now)
        for profile in drained(self.supervisor.served) if self.supervisor is not None else []:
            changes += evaluator.saw_serving(profile, now)
        if tick.rig is not None:
            changes += evaluator.on_rig(tick.rig)
        for text in self._found:
            changes += evaluator.on_regression(text, now)
        self._found = []
        changes += [evaluator.event(alert, now) for alert in events]
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
        self.sink.emit(changes, evaluator.firing)
        if self.supervisor is not None:
            for change in changes:
                if change.state == "fired" and change.alert.kind == "engine-died":
                    self.supervisor.engine_died(change.profile or "the last good profile")
            self.supervisor.tick(serving.active_profile, down, self.bring_up)
        return changes

    def _say_source(self, state: EngineState) -> None:
        """What is not an observation of vLLM (a damaged server.json, an answer that is not vLLM's
        exposition: a web page, an empty 200) is never a row of idle serving: said once."""
        problem = self.monitor.endpoint_problem
        if problem is not None:
            self.notes.trouble("server.json", f"{problem}: not recording until it is rewritten")
            return
        self.notes.passed("server.json", "the server record is readable again")
        snap, url = state.snapshot, state.target.url if state.target else "the server"
        if state.error is None and snap is not None and not snap.is_vllm:
            self.notes.trouble(
                "exposition", f"{url}/metrics answered, but not with vLLM's metrics: nothing is recorded while it does"
            )
        elif state.error is None and snap is not None:
            self.notes.passed("exposition", f"{url}/metrics answers with vLLM's metrics again")

    def run(self, stop: Stop, announce: str = "") -> int:
        """Until `stop` is set; the rows written. ServiceRunning when another service watches;
        RecordTrouble when the record cannot be kept from the start (see _open)."""
        lock = ServiceLock()
        try:
            self._open(strict=True)
            if announce:
                self.say(announce)  # once it is sure to run: a refusal is the only line
            while not stop.is_set():
                self.step()
                stop.wait(self.interval_s / 5)
        finally:
            self._close_record()
            self.monitor.close()
            self.sink.close()
            lock.close()
        return self.rows_written
