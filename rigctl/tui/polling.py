"""The app's polling: one long-lived thread samples the GPUs each tick and posts one message, so
the screen repaints once a second; the monitor polls the engine beside it (rigctl/monitor.py), and
a tick carries whatever that poll finished. A worker per poll cost more than the poll (its state
messages and a second repaint); see benchmarks/bench_tui.py. ServingApp (tui/serving_actions.py) adds
the serving actions to it, RigApp (tui/app.py) the screens and keys."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, cast

from textual import work
from textual.app import App
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker, get_current_worker

from rigctl.tui.messages import Polled
from rigctl.tui.worker_errors import SaysWorkerErrors

if TYPE_CHECKING:  # the pipeline is built after the first frame, and imported then
    from rigctl.config import Settings
    from rigctl.engine.poller import EngineState
    from rigctl.gpu.model import RigSnapshot
    from rigctl.gpu.sampler import RigSampler
    from rigctl.monitor import Monitor
    from rigctl.observe.pipeline import LivePipeline
    from rigctl.state.serving import ServingStatus
    from rigctl.tui.alerting import TuiAlerts
    from rigctl.tui.screens.dashboard import DashboardScreen
    from rigctl.tui.screens.processes import ProcessesScreen
    from rigctl.tui.screens.profiles import ProfilesScreen


class PollingApp(SaysWorkerErrors, App[None]):
    # set by RigApp's __init__
    sampler: RigSampler
    settings: Settings
    dashboard: DashboardScreen
    _record: bool
    _live: tuple[LivePipeline, TuiAlerts] | None
    _live_lock: threading.Lock
    _wake: threading.Event
    _unmounted: threading.Event  # set once, at unmount: a wake the loop clears, this one it never does
    _poll_loop_worker: Worker[None] | None
    _tick_worker: Worker[None] | None
    _tick_lock: threading.Lock
    _tick_running: bool
    _tick_again: bool
    _rig_failing: bool

    @property
    def pipeline(self) -> LivePipeline:
        """The one live pipeline `rigctl watch` runs too: this app renders its ticks, and keeps the
        record only while no watch service does. Built after the first frame (or when first asked)."""
        return self._observing()[0]

    @property
    def monitor(self) -> Monitor:
        return self._observing()[0].monitor

    @property
    def alerts(self) -> TuiAlerts:
        return self._observing()[1]

    def _observing(self) -> tuple[LivePipeline, TuiAlerts]:
        with self._live_lock:  # the main thread after the first frame, or a tick `r` started before it
            if self._live is None:
                from rigctl.observe.pipeline import LivePipeline
                from rigctl.tui.alerting import TuiAlerts

                pipeline = LivePipeline(self.sampler, self.settings, self._record_note, service=False, record=self._record)
                self._live = (pipeline, TuiAlerts(self.notify, self.dashboard.show_alerts, pipeline))
            return self._live

    # From the record's thread (App.notify is thread-safe): trouble with the record, once while it
    # lasts, and the hand-over to a watch service. (A hit-rate regression is an alert: judged with
    # the next tick.)
    def _record_note(self, text: str) -> None:
        self.notify(text, title="serving record", severity="warning", timeout=15)

    def made_screen(self, name: str) -> Screen[Any] | None:
        """An installed screen, if it was built already (the main screens are built when first shown)."""
        return self.get_screen(name) if self.is_screen_installed(name) else None

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification as plain text: what rigctl says carries names from files and config
        (`[prometheus] url`, `[rigs.box2]`, a profile or path with brackets) that Textual's markup
        would eat or fail on. Screens' and widgets' notify calls end here too."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    @property
    def serving_action_running(self) -> bool:
        return False  # RigApp says when a switch, restart or stop runs

    def poll_now(self) -> None:
        """Sample now: wakes the loop, or (no loop: tests, r before the first tick) runs one tick. A
        tick already under way may have sampled before the ask: it samples once more before it ends,
        so what changed before `r` is always shown (never a tick that had already read the GPUs)."""
        if self._poll_loop_worker is not None and not self._poll_loop_worker.is_finished:
            self._wake.set()
            return
        with self._tick_lock:
            if self._tick_running:
                self._tick_again = True
                return
            self._tick_running = True
        self._tick_worker = self._one_tick()

    @work(thread=True, group="poll", exit_on_error=False, description="Sampling the GPUs and /metrics")
    def _one_tick(self) -> None:
        from rigctl.bench.live import read_live

        try:
            while True:
                engine, serving = self.monitor.poll_engine_now()
                tick = self.monitor.tick(False, self.dashboard.tail_reader)
                self.post_message(Polled(tick.rig, engine, serving, list(tick.errors), tick.log, read_live()))
                with self._tick_lock:
                    if not self._tick_again:
                        self._tick_running = False
                        return
                    self._tick_again = False
        except BaseException:
            with self._tick_lock:
                self._tick_running = self._tick_again = False
            raise

    @work(thread=True, group="poll-loop", exit_on_error=False, description="Sampling the GPUs and /metrics")
    def _poll_loop(self, interval: float, metrics_interval: float) -> None:
        from rigctl.bench.live import read_live

        worker = get_current_worker()
        next_engine = 0.0
        while not worker.is_cancelled and not self._unmounted.is_set():
            started = time.monotonic()
            woken = self._wake.is_set()
            self._wake.clear()
            engine_due = woken or started >= next_engine
            if engine_due:
                next_engine = started + metrics_interval - 0.05
            tick = self.monitor.tick(engine_due, self.dashboard.tail_reader)
            bench = read_live() if tick.serving is not None else None  # with the engine's poll, not every second
            self.post_message(Polled(tick.rig, tick.engine, tick.serving, list(tick.errors), tick.log, bench))
            self._wake.wait(max(0.05, interval - (time.monotonic() - started)))

    def on_polled(self, message: Polled) -> None:
        if not self.is_running:  # a tick the poll thread sent as the app quits: the screens' widgets are being removed
            return
        with self.batch_update():  # one repaint for the whole tick
            for source, error in message.errors:
                self._poll_failed(source, error)
            if message.rig is not None:
                self._rig_sampled(message.rig)
            if message.engine is not None and message.serving is not None:
                self._engine_sampled(message.engine, message.serving)
                self.dashboard.show_bench(message.bench)
            if message.log is not None:
                self.dashboard.show_log(*message.log)

    def _rig_sampled(self, snapshot: RigSnapshot) -> None:
        if self._rig_failing:
            self._rig_failing = False
            self.dashboard.mark_stale(False)
        self.dashboard.show(snapshot)
        processes = self.made_screen("processes")
        if processes is not None and self.screen is processes:
            cast("ProcessesScreen", processes).show(snapshot)
        self.alerts.on_rig(snapshot)

    def _engine_sampled(self, state: EngineState, serving: ServingStatus) -> None:
        self.dashboard.show_engine(state, serving)
        self.alerts.on_engine(state, serving, switching=self.serving_action_running)
        profiles = self.made_screen("profiles")
        if profiles is not None:  # its ● follows what serves now, not what served when it was loaded
            cast("ProfilesScreen", profiles).show_active(serving.active_profile)

    def _poll_failed(self, source: str, error: str) -> None:
        if source != "rig":
            self.notify(f"{source} poll failed: {error}", severity="warning")
            return
        if not self._rig_failing:  # notify once per outage, keep the last values marked stale
            self._rig_failing = True
            self.dashboard.mark_stale(True)
            self.notify(f"GPU sampling failed: {error}", severity="error")
