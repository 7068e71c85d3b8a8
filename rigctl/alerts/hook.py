"""The owner's `[alerts] command`: run once per change with the change as JSON on stdin, for ntfy,
a mail script or a webhook. An argv (never a shell line), bounded in time, run off the watcher's
loop by one thread in order; a failure is said once while it lasts (a broken hook must not fill
the journal every time an alert fires), and a backlog is bounded (a hung hook drops changes,
never memory)."""

from __future__ import annotations

import queue
import subprocess
import threading
from collections.abc import Callable, Sequence

from rigctl import jsonio
from rigctl.alerts.model import AlertChange
from rigctl.redact import redact_text

BACKLOG = 64


class AlertHook:
    def __init__(self, argv: Sequence[str], timeout_s: float, say: Callable[[str], None]) -> None:
        self.argv, self.timeout_s, self.say = tuple(argv), timeout_s, say
        self._queue: queue.Queue[AlertChange | None] = queue.Queue(maxsize=BACKLOG)
        self._failing = False
        self.ran = 0
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="alert-hook", daemon=True)
        self._thread.start()

    def send(self, change: AlertChange) -> None:
        try:
            self._queue.put_nowait(change)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while (change := self._queue.get()) is not None:
            self._call(change)

    def _call(self, change: AlertChange) -> None:
        name = self.argv[0]
        try:
            done = subprocess.run(
                list(self.argv),
                input=jsonio.dumps(change.to_json()) + "\n",
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            self._failed(
                f"the alert command {name} did not finish in {self.timeout_s:g} s ([alerts] command_timeout_s); it was killed"
            )
            return
        except OSError as exc:
            self._failed(f"the alert command {name} could not run: {exc.strerror or exc}")
            return
        self.ran += 1
        if done.returncode != 0:
            last = redact_text((done.stderr.strip().splitlines() or [""])[-1][:200])  # a webhook's token stays out of the journal
            self._failed(f"the alert command {name} exited {done.returncode}" + (f": {last}" if last else ""))
            return
        if self._failing:
            self._failing = False
            self.say(f"the alert command {name} works again")

    def _failed(self, text: str) -> None:
        if not self._failing:
            self._failing = True
            self.say(f"{text} (said once until it works again)")

    def close(self, wait_s: float = 5.0) -> None:
        """Let the changes already sent run (an engine death said as the service stops still
        reaches the owner), at most `wait_s`."""
        try:
            self._queue.put(None, timeout=wait_s)
        except queue.Full:
            return
        self._thread.join(timeout=wait_s)
