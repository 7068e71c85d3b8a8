"""The TUI's record keeping on a thread of its own: fed by the dashboard's own engine poll
(Monitor.record_to), so the TUI scrapes /metrics once a second, not twice; the writes and the
hourly compaction happen here, never in the poll, and a stalled disk drops samples, not polls.
What is kept and when it stands aside is the keeper's (observe/keeper.py), the same as the watch
service's."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from rigctl.alerts.model import AlertChange
from rigctl.errors import RigctlError
from rigctl.observe.keeper import RecordKeeper
from rigctl.record.recorder import Observation

LOOK_EVERY_S = 1.0  # how often it asks whether a service started (or stopped): the handover gap


class BackgroundRecorder:
    def __init__(self, keeper: RecordKeeper, fault: Callable[[str], None] = lambda text: None) -> None:
        """`fault`: how a failure of rigctl's own on this thread is said (the TUI: an alert event,
        as a worker's error is a notification); the thread goes on with the next observation."""
        self.keeper = keeper
        self.fault = fault
        self._failing: str | None = None
        self._stop = threading.Event()
        self._queue: queue.Queue[Observation | AlertChange | None] = queue.Queue(maxsize=64)
        self._thread: threading.Thread | None = None
        self._looked = -LOOK_EVERY_S
        self.problem: str | None = None  # why the record cannot be kept at all (a damaged file, a read-only dir)

    def start(self) -> bool:
        """Start the thread; False when the record cannot be kept at all (`problem` says why)."""
        try:
            self._look(strict=True)
        except (OSError, RigctlError) as exc:
            self.problem = f"the serving record is not kept: {exc}"
            return False
        self._thread = threading.Thread(target=self._run, name="recorder", daemon=True)
        self._thread.start()
        return True

    def _look(self, strict: bool = False) -> None:
        self._looked = time.monotonic()
        self.keeper.open(strict)

    def _run(self) -> None:
        while not self._stop.is_set():
            if time.monotonic() - self._looked >= LOOK_EVERY_S:
                self._look()
            try:
                seen = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            if self._stop.is_set():  # woken by stop(): what it put there is no observation
                return
            try:
                if isinstance(seen, AlertChange):
                    if self.keeper.recording:  # a change seen while the service kept the record is the service's
                        self.keeper.record_change(seen)
                else:
                    self.keeper.observe(seen)
            except Exception as exc:  # noqa: BLE001 - a fault of rigctl's own: said, and the record goes on
                said = f"keeping the serving record failed: {type(exc).__name__}: {exc}"
                if said != self._failing:  # once while the same fault lasts
                    self._failing = said
                    self.fault(said)
            else:
                self._failing = None

    def offer(self, seen: Observation | AlertChange | None) -> None:
        """From the engine poll's thread (or the UI's, a change): never blocks it."""
        if self._thread is None:
            return
        try:
            self._queue.put_nowait(seen)
        except queue.Full:
            pass

    def stop(self) -> None:
        self._stop.set()
        try:  # wakes the thread now, not at its next half-second look: quitting the TUI waits for it
            self._queue.put_nowait(None)
        except queue.Full:
            pass  # it is busy with what is queued, and sees the stop before the next
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.keeper.close()
