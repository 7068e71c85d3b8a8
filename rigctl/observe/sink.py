"""Where an alert change goes, once: a line for the journal (or the TUI's notification), a row of
the record, the owner's hook, and alerts.json (what fires now, for `rigctl status`). Whoever keeps
the record (the service, or a TUI recording alone) is the one that records, sends and writes
alerts.json; a TUI beside a service only shows."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from rigctl.alerts.firing import clear_firing, write_firing
from rigctl.alerts.hook import AlertHook
from rigctl.alerts.model import Alert, AlertChange
from rigctl.config import Settings

HEARTBEAT_S = 30.0  # alerts.json rewritten at least this often: `status` sees a watcher that lives


class AlertSink:
    def __init__(
        self,
        settings: Settings,
        say: Callable[[str], None],
        record: Callable[[AlertChange], None],
        trouble: Callable[[str], None] | None = None,
    ) -> None:
        """`say`: one line per change; `trouble`: the hook's and alerts.json's (default: `say`);
        `record`: writes a change to the record."""
        self.say, self.record = say, record
        self.trouble = trouble or say
        self.hook = (
            AlertHook(settings.alerts_command, settings.alerts_command_timeout, self.trouble) if settings.alerts_command else None
        )
        self.since: dict[str, float] = {}
        self._written = 0.0
        self._failed_write = False

    def emit(self, changes: Sequence[AlertChange], firing: dict[str, Alert], owner: bool = True) -> None:
        """`owner`: this process keeps the record (else it only says them)."""
        for change in changes:
            if change.state == "fired":
                self.since[change.alert.key] = change.at
            elif change.state == "cleared":
                self.since.pop(change.alert.key, None)
            self.say(change.line)
            if owner:
                self.record(change)
                if self.hook is not None:
                    self.hook.send(change)
        if owner and (changes or time.monotonic() - self._written >= HEARTBEAT_S):
            self._write(firing)

    def _write(self, firing: dict[str, Alert]) -> None:
        self._written = time.monotonic()
        try:
            write_firing(firing, self.since)
            self._failed_write = False
        except OSError as exc:
            if not self._failed_write:  # said once while it lasts
                self._failed_write = True
                self.trouble(f"alerts.json could not be written ({exc}): `rigctl status` does not see the alerts")

    def close(self, owner: bool = True) -> None:
        if self.hook is not None:
            self.hook.close()
        if owner:
            clear_firing()
