"""The TUI's alerts: judged from each tick of the dashboard's own poll (no scrape of their own),
said as notifications and kept on the serving bar while they fire. Recorded, sent to `[alerts]
command` and written to alerts.json only while this TUI keeps the record: when the watch service
runs, it does that, and the TUI only shows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from rigctl.alerts.evaluator import AlertEvaluator
from rigctl.alerts.limits import AlertLimits
from rigctl.alerts.model import AlertChange
from rigctl.config import Settings
from rigctl.engine.poller import EngineState
from rigctl.gpu.model import RigSnapshot
from rigctl.record.background import BackgroundRecorder
from rigctl.severity import NotifySeverity, for_notify
from rigctl.state.serving import ServingStatus
from rigctl.watch.sink import AlertSink


class Notify(Protocol):  # App.notify, as much of it as is used here
    def __call__(self, message: str, *, title: str, severity: NotifySeverity, timeout: float) -> None: ...


class TuiAlerts:
    def __init__(
        self, notify: Notify, show: Callable[[list[str]], None], settings: Settings, recorder: BackgroundRecorder | None
    ) -> None:
        """`show`: the titles firing now, for the dashboard's serving bar."""
        self.notify, self.show, self.recorder = notify, show, recorder
        self.evaluator = AlertEvaluator(AlertLimits.of(settings))
        self.sink = AlertSink(settings, lambda text: None, self._record)

    @property
    def owner(self) -> bool:
        return self.recorder is not None and self.recorder.recording

    def _record(self, change: AlertChange) -> None:
        if self.recorder is not None:
            self.recorder.offer(change)

    def on_rig(self, snapshot: RigSnapshot) -> None:
        self._emit(self.evaluator.on_rig(snapshot))

    def on_engine(self, state: EngineState, serving: ServingStatus, switching: bool) -> None:
        changes = self.evaluator.on_engine(state.snapshot if state.error is None else None)
        if not switching:  # the TUI's own switch says its own outcome
            changes += self.evaluator.on_serving(serving)
        self._emit(changes)

    def on_regression(self, text: str) -> None:
        self._emit(self.evaluator.on_regression(text))

    def _emit(self, changes: Sequence[AlertChange]) -> None:
        self.sink.emit(changes, self.evaluator.firing, owner=self.owner)
        for change in changes:
            alert = change.alert
            if change.state == "cleared":
                self.notify(alert.text, title=f"cleared: {alert.title}", severity="information", timeout=10)
            else:
                timeout = 30 if alert.severity == "error" else 15
                self.notify(alert.text, title=alert.title, severity=for_notify(alert.severity), timeout=timeout)
        if changes:
            self.show([a.title for a in self.evaluator.firing.values()])

    def close(self) -> None:
        self.sink.close(owner=self.owner)
