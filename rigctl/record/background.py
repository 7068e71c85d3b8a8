"""The recorder on a thread of its own, as the TUI runs it: it records only when no other
recorder writes (a headless `rigctl record` wins), and says once per boot when the switch to it
collapsed the prefix hit rate."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from rigctl.config import Settings
from rigctl.errors import RigctlError
from rigctl.gpu.sampler import RigSampler
from rigctl.record.derive import Regression, current_regression, thresholds_of
from rigctl.record.recorder import Recorder, ServingSource
from rigctl.record.rows import Row
from rigctl.record.store import RecorderBusy, RecordReader, RecordWriter

CHECK_EVERY_S = 60.0
LOOK_BACK_S = 7 * 86400


class BackgroundRecorder:
    def __init__(self, sampler: RigSampler | None, settings: Settings,
                 on_regression: Callable[[Regression], None]) -> None:
        self.sampler, self.settings, self.on_regression = sampler, settings, on_regression
        self._stop = threading.Event()
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
        source = ServingSource(self.sampler)
        recorder = Recorder(self._writer, source, self.settings.record_interval, self._row)

        def run() -> None:
            try:
                recorder.run(self._stop)
            except RigctlError as exc:  # a full disk, a damaged file: the record stops, the TUI does not
                self.problem = f"the serving record stopped: {exc}"
            finally:
                source.close()

        self._thread = threading.Thread(target=run, name="recorder", daemon=True)
        self._thread.start()
        return True

    def _row(self, row: Row) -> None:
        if row.boot in self._judged or time.monotonic() - self._checked < CHECK_EVERY_S:
            return
        self._checked = time.monotonic()
        try:
            rows = RecordReader().rows(since=time.time() - LOOK_BACK_S)
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
