"""The recorder on a thread of its own, as the TUI runs it: fed by the dashboard's own engine
poll (Monitor.record_to), so the TUI scrapes /metrics once a second, not twice; writes and the
hourly compaction happen here, never in the poll. It records only when no other recorder writes
(a headless `rigctl record` wins), and says once per boot when the switch to it collapsed the
prefix hit rate."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from rigctl.config import Settings
from rigctl.errors import RigctlError
from rigctl.record.derive import Regression, current_regression, thresholds_of
from rigctl.record.recorder import Notes, Observation, Recorder
from rigctl.record.rows import Row
from rigctl.record.store import RecorderBusy, RecordReader, RecordWriter

CHECK_EVERY_S = 60.0
LOOK_BACK_S = 7 * 86400


class BackgroundRecorder:
    def __init__(
        self, settings: Settings, on_regression: Callable[[Regression], None], on_note: Callable[[str], None] = lambda text: None
    ) -> None:
        """`on_note`: trouble with the record, said once while it lasts (called from its thread)."""
        self.settings, self.on_regression, self.on_note = settings, on_regression, on_note
        self._stop = threading.Event()
        self._queue: queue.Queue[Observation | None] = queue.Queue(maxsize=16)
        self._thread: threading.Thread | None = None
        self._writer: RecordWriter | None = None
        self._judged: set[str] = set()
        self._checked = 0.0
        self.busy_note: str | None = None  # why this one does not record (another recorder writes)
        self.problem: str | None = None  # why the record cannot be kept at all (a damaged file, a full disk)

    def start(self) -> bool:
        try:
            self._writer = RecordWriter()
        except RecorderBusy as exc:
            self.busy_note = str(exc)
            return False
        except (OSError, RigctlError) as exc:
            self.problem = f"the serving record is not kept: {exc}"
            return False
        recorder = Recorder(self._writer, self.settings.record_interval, self._row, Notes(self.on_note))

        def run() -> None:
            try:
                while not self._stop.is_set():
                    try:
                        seen = self._queue.get(timeout=0.5)
                    except queue.Empty:
                        continue
                    recorder.step(seen)
            except RigctlError as exc:  # trouble that will not pass (a damaged file): the record stops, the TUI not
                self.problem = f"the serving record stopped: {exc}"
                self.on_note(self.problem)

        self._thread = threading.Thread(target=run, name="recorder", daemon=True)
        self._thread.start()
        return True

    def offer(self, seen: Observation | None) -> None:
        """From the engine poll's thread: never blocks it (a stalled disk drops samples, not polls)."""
        if self._thread is None:
            return
        try:
            self._queue.put_nowait(seen)
        except queue.Full:
            pass

    def _row(self, row: Row) -> None:
        if row.boot in self._judged or time.monotonic() - self._checked < CHECK_EVERY_S:
            return
        self._checked = time.monotonic()
        try:
            rows = RecordReader().switch_rows(row.boot, LOOK_BACK_S)
        except RigctlError:
            return
        found = current_regression(rows, row.boot, thresholds_of(self.settings))
        if found is not None:
            self._judged.add(row.boot)
            self.on_regression(found)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._writer is not None:
            self._writer.close()
            self._writer = None
