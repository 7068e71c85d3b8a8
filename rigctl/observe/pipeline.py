"""The one live pipeline: one Monitor polls (the GPUs, the engine's /metrics and /health, what
serves), its engine polls are recorded (no scrape of the record's own), the alerts are judged
once from what it saw, and each change goes once to the sink (a line or a notification, the
record, the owner's hook, alerts.json).

`rigctl watch` runs it keeping the record in its own loop (`service=True`); the TUI runs the
same object, renders its ticks and keeps the record on a thread of its own, only while no
service keeps it (nvitop's one collector that any consumer runs is the model). Decided so,
rather than only the service writing: an owner who never installs the unit still gets a record
from the TUI, as before; the hand-over between the two is the keeper's alone."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Sequence

from rigctl.alerts.evaluator import AlertEvaluator
from rigctl.alerts.limits import AlertLimits
from rigctl.alerts.model import AlertChange
from rigctl.config import Settings
from rigctl.engine.poller import EngineState
from rigctl.gpu.model import RigSnapshot
from rigctl.gpu.sampler import RigSampler
from rigctl.monitor import Monitor
from rigctl.observe.background import BackgroundRecorder
from rigctl.observe.keeper import RecordKeeper
from rigctl.observe.sink import AlertSink
from rigctl.record.regression_watch import RegressionWatch
from rigctl.record.rows import Row
from rigctl.record.store import RETENTION_DAYS
from rigctl.state.serving import ServingStatus


class LivePipeline:
    def __init__(
        self,
        sampler: RigSampler | None,
        settings: Settings,
        say: Callable[[str], None],
        *,
        service: bool,
        record: bool = True,
        on_row: Callable[[Row], None] = lambda row: None,
        interval_s: float | None = None,
        retention_days: float = RETENTION_DAYS,
    ) -> None:
        """`say`: the record's trouble and, for the service, each alert change as a line; `record`:
        keep the record at all (a TUI started with it off never writes); `on_row`: each row written."""
        self.settings, self.service, self._on_row = settings, service, on_row
        self.monitor = Monitor(sampler, settings)
        self.keeper = RecordKeeper(
            settings, say, self._row, yields=not service, interval_s=interval_s, retention_days=retention_days
        )
        self.background = BackgroundRecorder(self.keeper, fault=say) if record and not service else None
        self.evaluator = AlertEvaluator(AlertLimits.of(settings))
        # the service says each change as a line; the TUI notifies them itself (TuiAlerts); the
        # sink's own trouble (the hook failing, alerts.json unwritable) is said in both
        self.sink = AlertSink(settings, say if service else (lambda text: None), self._record_change, trouble=say)
        self._regressions = RegressionWatch(settings)
        self._found: queue.SimpleQueue[str] = queue.SimpleQueue()  # from whichever thread writes rows
        self.recording_off = not record

    # -- the record ---------------------------------------------------------------------------

    def start_record(self, strict: bool = False) -> str | None:
        """Start keeping the record: the service opens it here (strict: one line and exit 1 for
        trouble that will not pass), the TUI starts its thread. The TUI's problem, or None."""
        if self.service:
            self.keeper.open(strict)
            self.monitor.record_to = self.keeper.observe
            return None
        if self.background is None:
            return None
        if not self.background.start():
            return self.background.problem
        self.monitor.record_to = self.background.offer  # the dashboard's poll feeds the record
        return None

    def look(self) -> None:
        """The service's keeper tries again to open the record when it has none (a backoff)."""
        if self.service:
            self.keeper.open()

    @property
    def owner(self) -> bool:
        """This process's alert changes are the recorded and sent ones."""
        return False if self.recording_off and not self.service else self.keeper.owner

    def _row(self, row: Row) -> None:
        self._on_row(row)
        found = self._regressions.after(row)
        if found is not None:
            self._found.put(found.describe())

    def _record_change(self, change: AlertChange) -> None:
        if self.background is not None:
            self.background.offer(change)  # written on the record's thread, never the UI's
        else:
            self.keeper.record_change(change)

    # -- the alerts ---------------------------------------------------------------------------

    def judge(
        self,
        *,
        rig: RigSnapshot | None = None,
        engine: EngineState | None = None,
        serving: ServingStatus | None = None,
        switching: bool = False,
        served: Sequence[str] = (),
        now: float | None = None,
    ) -> list[AlertChange]:
        """The alert changes of what one tick saw, and the hit-rate regressions the rows written
        since the last judgement show. `switching`: a serving action of this process runs (it says
        its own outcome: what serves meanwhile is not judged); `served`: profiles the supervisor's
        restarts brought up since the last judgement."""
        now = time.time() if now is None else now
        changes: list[AlertChange] = []
        if engine is not None:
            changes += self.evaluator.on_engine(engine.snapshot if engine.error is None else None, now)
            if serving is not None and not switching:
                changes += self.evaluator.on_serving(serving, now)
        for profile in served:
            changes += self.evaluator.saw_serving(profile, now)
        if rig is not None:
            changes += self.evaluator.on_rig(rig)
        while True:
            try:
                text = self._found.get_nowait()
            except queue.Empty:
                break
            changes += self.evaluator.on_regression(text, now)
        return changes

    def emit(self, changes: Sequence[AlertChange]) -> None:
        """Each change once to the sink: recorded, sent and written to alerts.json only by the owner."""
        self.sink.emit(changes, self.evaluator.firing, owner=self.owner)

    def close(self) -> None:
        owner = self.owner  # asked before the record is let go
        if self.background is not None:
            self.background.stop()
        else:
            self.keeper.close()
        self.monitor.close()
        self.sink.close(owner=owner)
