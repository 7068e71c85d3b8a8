"""The TUI's alerts: judged by the live pipeline from each tick of the dashboard's own poll (no
scrape of their own), said as notifications and kept on the serving bar while they fire.
Recorded, sent to `[alerts] command` and written to alerts.json only while this TUI keeps the
record (observe/pipeline.py): when the watch service runs, it does that, and the TUI only shows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from rigctl.severity import NotifySeverity, for_notify

if TYPE_CHECKING:
    from rigctl.alerts.model import AlertChange
    from rigctl.engine.poller import EngineState
    from rigctl.gpu.model import RigSnapshot
    from rigctl.observe.pipeline import LivePipeline
    from rigctl.state.serving import ServingStatus


class Notify(Protocol):  # App.notify, as much of it as is used here
    def __call__(self, message: str, *, title: str, severity: NotifySeverity, timeout: float) -> None: ...


class TuiAlerts:
    def __init__(self, notify: Notify, show: Callable[[list[str]], None], pipeline: LivePipeline) -> None:
        """`show`: the titles firing now, for the dashboard's serving bar."""
        self.notify, self.show, self.pipeline = notify, show, pipeline

    def on_rig(self, snapshot: RigSnapshot) -> None:
        self._emit(self.pipeline.judge(rig=snapshot))

    def on_engine(self, state: EngineState, serving: ServingStatus, switching: bool) -> None:
        # the TUI's own switch says its own outcome: what serves meanwhile is not judged
        self._emit(self.pipeline.judge(engine=state, serving=serving, switching=switching))

    def _emit(self, changes: Sequence[AlertChange]) -> None:
        self.pipeline.emit(changes)
        for change in changes:
            alert = change.alert
            if change.state == "cleared":
                self.notify(alert.text, title=f"cleared: {alert.title}", severity="information", timeout=10)
            else:
                timeout = 30 if alert.severity == "error" else 15
                self.notify(alert.text, title=alert.title, severity=for_notify(alert.severity), timeout=timeout)
        if changes:
            self.show([a.title for a in self.pipeline.evaluator.firing.values()])
