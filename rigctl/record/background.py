"""The recorder on a thread of its own, as the TUI runs it: fed by the dashboard's own engine
poll (Monitor.record_to), so the TUI scrapes /metrics once a second, not twice; writes and the
hourly compaction happen here, never in the poll.

The watch service keeps the record when it runs (rigctl/record/service_lock.py): the TUI records
only while none does, stands aside as soon as one starts (its partial row written first), and
takes the record back when the service stops. It says once per boot when the switch to it
collapsed the prefix hit rate, and writes the alert changes it is given while it records."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from rigctl.alerts.model import AlertChange
from rigctl.config import Settings
from rigctl.errors import RigctlError
from rigctl.record.derive import Regression
from rigctl.record.recorder import Notes, Observation, Recorder
from rigctl.record.regression_watch import RegressionWatch
from rigctl.record.rows import Row
from rigctl.record.service_lock import service_pid
from rigctl.record.store import RecorderBusy, RecordTrouble, RecordWriter

LOOK_EVERY_S = 1.0  # how often it asks whether a service started (or stopped): the handover gap


class BackgroundRecorder:
    def __init__(
        self, settings: Settings, on_regression: Callable[[Regression], None], on_note: Callable[[str], None] = lambda text: None
    ) -> None:
        """`on_note`: trouble with the record, said once while it lasts (called from its thread)."""
        self.settings, self.on_regression, self.on_note = settings, on_regression, on_note
        self._stop = threading.Event()
        self._queue: queue.Queue[Observation | AlertChange | None] = queue.Queue(maxsize=64)
        self._thread: threading.Thread | None = None
        self._writer: RecordWriter | None = None
        self._recorder: Recorder | None = None
        self._regressions = RegressionWatch(settings)
        self._looked = -LOOK_EVERY_S
        self.busy_note: str | None = None  # why this one does not record now (the service, another recorder)
        self.problem: str | None = None  # why the record cannot be kept at all (a damaged file, a full disk)

    @property
    def recording(self) -> bool:
        """This TUI keeps the record now (no service runs): its alerts are the ones recorded and sent."""
        return self._writer is not None

    def start(self) -> bool:
        """Start the thread; False when the record cannot be kept at all (`problem` says why)."""
        self._look()
        if self.problem is not None:
            return False
        self._thread = threading.Thread(target=self._run, name="recorder", daemon=True)
        self._thread.start()
        return True

    def _look(self) -> None:
        """Record when no service does; stand aside when one does."""
        self._looked = time.monotonic()
        service = service_pid()
        if service is not None:
            if self._writer is not None:
                self._stand_aside(f"the watch service (pid {service}) keeps the record; this TUI stands aside")
            self.busy_note = f"the watch service (pid {service}) keeps the record"
            return
        if self._writer is not None:
            return
        try:
            self._writer = RecordWriter()
        except RecorderBusy as exc:
            self.busy_note = str(exc)
            return
        except (OSError, RigctlError) as exc:
            self.problem = f"the serving record is not kept: {exc}"
            return
        self.busy_note = None
        self._recorder = Recorder(self._writer, self.settings.record_interval, self._row, Notes(self.on_note))

    def _stand_aside(self, why: str) -> None:
        recorder, writer = self._recorder, self._writer
        self._recorder = self._writer = None
        try:
            if recorder is not None:
                recorder.finish()  # the seconds since its last row are written, not lost at the handover
        except RigctlError:
            pass  # (trouble that will not pass: the service will say it too)
        if writer is not None:
            writer.close()
        self.on_note(why)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if time.monotonic() - self._looked >= LOOK_EVERY_S:
                    self._look()
                try:
                    seen = self._queue.get(timeout=0.5)
                except queue.Empty:
                    continue
                if isinstance(seen, AlertChange):
                    if self._writer is not None:
                        self._write_event(self._writer, seen)
                elif self._recorder is not None:
                    self._recorder.step(seen)
        except RigctlError as exc:  # trouble that will not pass (a damaged file): the record stops, the TUI not
            self.problem = f"the serving record stopped: {exc}"
            self.on_note(self.problem)

    def _write_event(self, writer: RecordWriter, change: AlertChange) -> None:
        try:
            writer.add_event(change)
        except RecordTrouble as exc:
            if not exc.passing:
                raise
            self.on_note(f"an alert was not recorded: {exc}")

    def offer(self, seen: Observation | AlertChange | None) -> None:
        """From the engine poll's thread: never blocks it (a stalled disk drops samples, not polls)."""
        if self._thread is None:
            return
        try:
            self._queue.put_nowait(seen)
        except queue.Full:
            pass

    def _row(self, row: Row) -> None:
        found = self._regressions.after(row)
        if found is not None:
            self.on_regression(found)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._writer is not None:
            try:
                if self._recorder is not None:
                    self._recorder.finish()
            except RigctlError:
                pass
            self._writer.close()
            self._writer = None
