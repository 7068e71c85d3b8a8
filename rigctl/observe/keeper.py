"""The serving record kept by one process, the same for `rigctl watch` and the TUI: the writer
opened when it can be, kept, given up when it fails and opened again with a backoff.

The watch service keeps the record first (record/service_lock.py). A keeper that `yields` (the
TUI's) records only while no service runs, stands aside as soon as one starts (its partial row
written first) and takes the record back when the service stops; the service's keeper waits for
such a TUI to stand aside, and holds alert changes in memory while the record cannot be opened.
Trouble is said once while it lasts (Notes)."""

from __future__ import annotations

import time
from collections.abc import Callable

from rigctl.alerts.model import AlertChange
from rigctl.config import Settings
from rigctl.errors import RigctlError
from rigctl.record.recorder import Notes, Observation, Recorder
from rigctl.record.rows import Row
from rigctl.record.service_lock import service_pid
from rigctl.record.store import RETENTION_DAYS, RecorderBusy, RecordTrouble, RecordWriter

REOPEN_MAX_S = 60.0  # trouble opening the record is tried again at most this far apart
PENDING_MAX = 1000  # alert changes held while the record cannot be written


class RecordKeeper:
    def __init__(
        self,
        settings: Settings,
        say: Callable[[str], None],
        on_row: Callable[[Row], None],
        *,
        yields: bool,
        interval_s: float | None = None,
        retention_days: float = RETENTION_DAYS,
    ) -> None:
        """`say`: trouble, once while it lasts; `on_row`: each row written; `yields`: stand aside
        for a watch service (the TUI's keeper)."""
        self.say, self.on_row, self.yields = say, on_row, yields
        self.interval_s = interval_s if interval_s is not None else settings.record_interval
        self.retention_days = retention_days
        self.notes = Notes(say)
        self.writer: RecordWriter | None = None
        self.recorder: Recorder | None = None
        self.rows_written = 0
        self.busy_note: str | None = None  # why it does not record now (the service, another recorder)
        self._pending: list[AlertChange] = []
        self._next_open = 0.0
        self._open_wait = 1.0

    @property
    def recording(self) -> bool:
        return self.writer is not None

    @property
    def owner(self) -> bool:
        """Its alert changes are the ones recorded and sent: the service's always, a TUI's while it records."""
        return not self.yields or self.recording

    def open(self, strict: bool = False) -> None:
        """The record's writer, when it can be had. `strict` (the first try): trouble that will not
        pass (a read-only dir, a record of another schema) is raised, one line, so the owner sees it
        at once; later it is said once and tried again with a backoff."""
        if self.yields:
            service = service_pid()
            if service is not None:
                if self.writer is not None:
                    self._close()
                    self.say(f"the watch service (pid {service}) keeps the record; this TUI stands aside")
                self.busy_note = f"the watch service (pid {service}) keeps the record"
                return
        if self.writer is not None or time.monotonic() < self._next_open:
            return
        try:
            self.writer = RecordWriter(retention_days=self.retention_days)
        except RecorderBusy as exc:
            self.busy_note = str(exc)
            if not self.yields:  # a TUI holding it stands aside within seconds (it sees the service's lock)
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
        self.busy_note = None
        self.notes.clear("open")
        if not self.yields:
            self.say(f"recording to {self.writer.path} every {self.interval_s:g} s")
        self.recorder = Recorder(self.writer, self.interval_s, self.on_row, self.notes)
        pending, self._pending = self._pending, []
        for change in pending:
            self.record_change(change)

    def observe(self, seen: Observation | None) -> None:
        """One engine poll's observation (None: no vLLM to observe)."""
        if self.recorder is None:
            return
        try:
            self.recorder.step(seen)
        except RigctlError as exc:
            self._lost(exc)

    def record_change(self, change: AlertChange) -> None:
        if self.writer is None:
            self._pending = [*self._pending[-(PENDING_MAX - 1) :], change]  # written once the record opens
            return
        try:
            self.writer.add_event(change)
        except RecordTrouble as exc:
            if not exc.passing:
                self._lost(exc)
            self._pending = [*self._pending[-(PENDING_MAX - 1) :], change]

    def _lost(self, exc: RigctlError) -> None:
        self.notes.trouble("open", f"the record stopped: {exc}; the alerts go on without it")
        self._close()
        self._next_open = time.monotonic() + REOPEN_MAX_S

    def _close(self) -> None:
        """The interval under way written (not lost at a handover or a stop), the writer closed."""
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

    def close(self) -> None:
        self._close()
