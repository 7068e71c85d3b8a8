"""The owner's `[alerts] command`: run once per change with the change as JSON on stdin, for ntfy,
a mail script or a webhook. An argv (never a shell line), bounded in time, run off the watcher's
loop by one thread in order; a failure is said once while it lasts (a broken hook must not fill
the journal every time an alert fires), and a backlog is bounded (a hung hook drops changes,
never memory)."""

from __future__ import annotations

import os
import queue
import subprocess
import threading
from collections.abc import Callable, Sequence
from typing import IO

from rigctl import jsonio
from rigctl.alerts.model import AlertChange
from rigctl.redact import redact_text

BACKLOG = 64
OUTPUT_CAP = 64 * 1024  # of a hook's stderr kept (its first bytes); the rest is read and dropped


class CappedRead:
    """Reads a pipe to its end, keeping the first `cap` bytes and counting the rest: a hook that
    floods its output is drained (it never blocks on a full pipe) without growing memory."""

    def __init__(self, pipe: IO[bytes], cap: int) -> None:
        self.pipe, self.cap = pipe, cap
        self.kept = b""
        self.dropped = 0

    def run(self) -> None:
        with self.pipe:
            while chunk := os.read(self.pipe.fileno(), 65536):
                room = self.cap - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
                self.dropped += max(0, len(chunk) - max(0, room))


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
            try:
                self._call(change)
            except Exception as exc:  # noqa: BLE001 - a fault of rigctl's own: said, and the next alert still goes
                self._failed(f"sending the alert to {self.argv[0]} failed: {type(exc).__name__}: {exc}")

    def _call(self, change: AlertChange) -> None:
        name = self.argv[0]
        try:
            proc = subprocess.Popen(
                list(self.argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,  # nothing of it is used: a hook that floods it costs nothing
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            self._failed(f"the alert command {name} could not run: {exc.strerror or exc}")
            return
        assert proc.stdin is not None and proc.stderr is not None
        err = CappedRead(proc.stderr, OUTPUT_CAP)
        reader = threading.Thread(target=err.run, name="alert-hook-stderr", daemon=True)
        reader.start()
        try:
            proc.stdin.write((jsonio.dumps(change.to_json()) + "\n").encode())
            proc.stdin.close()
        except OSError:
            pass  # a hook that does not read its stdin: its exit says the rest
        try:
            code = proc.wait(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            reader.join(5)
            self._failed(
                f"the alert command {name} did not finish in {self.timeout_s:g} s ([alerts] command_timeout_s); it was killed"
            )
            return
        reader.join(5)
        self.ran += 1
        if code != 0:
            text = err.kept.decode("utf-8", "replace")
            last = redact_text((text.strip().splitlines() or [""])[-1][:200])  # a webhook's token stays out of the journal
            dropped = f" ({err.dropped:,} bytes more of its stderr dropped)" if err.dropped else ""
            self._failed(f"the alert command {name} exited {code}" + (f": {last}" if last else "") + dropped)
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
