"""A bench's progress as a person or a script watching it sees it: on a terminal one line rewritten
in place; in a log (cron, nohup) a line per phase; with --progress, JSON lines."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict

from rigctl.bench.live import ArmProgress, progress_line
from rigctl.serve.context import Event


class Console:
    """Progress on stderr, whether or not it is a terminal: on a terminal one line rewritten in
    place; otherwise (cron, nohup, a pipe) a line per phase of each arm, and one a minute while it
    measures, each with the run's ETA, so a long bench never reads as hung; with --progress, the
    same as JSON lines for scripts (one per phase, and each second while measuring)."""

    QUIET_S = 60.0  # a plain line while measuring, at most this often
    JSON_S = 1.0

    def __init__(self, verbose: bool, json_lines: bool = False) -> None:
        self.tty = sys.stderr.isatty() and not json_lines
        self.verbose = verbose
        self.json_lines = json_lines
        self._open = False
        self._last: tuple[int, str] | None = None
        self._last_at = 0.0

    def _line(self, text: str, final: bool) -> None:
        width = 200
        sys.stderr.write("\r" + text[:width].ljust(min(width, 79)) + ("\n" if final else ""))
        sys.stderr.flush()
        self._open = not final

    def say(self, text: str) -> None:
        if self.json_lines:
            print(json.dumps({"t": round(time.time(), 3), "message": text}), file=sys.stderr, flush=True)
            return
        if self._open:
            sys.stderr.write("\n")
            self._open = False
        print(text, file=sys.stderr, flush=True)

    def event(self, event: Event) -> None:
        if event.kind in ("warning", "failure"):
            # "warning: " once: a diagnostic that says it itself ("p.toml:3: warning: ...") is not prefixed again
            said = "warning:" in event.text if event.kind == "warning" else False
            self.say(("" if said else "warning: " if event.kind == "warning" else "FAILED: ") + event.text)
        elif event.kind == "outcome" or (self.tty and (event.kind == "step" or (self.verbose and event.kind == "phase"))):
            self.say(f"  {event.text}")

    def progress(self, p: ArmProgress) -> None:
        now = time.monotonic()
        changed = (p.number, p.phase) != self._last
        due = now - self._last_at >= (self.JSON_S if self.json_lines else self.QUIET_S)
        if not self.tty and not changed and not due:
            return
        self._last, self._last_at = (p.number, p.phase), now
        if self.json_lines:
            print(json.dumps({"t": round(time.time(), 3), **asdict(p)}), file=sys.stderr, flush=True)
            return
        head = progress_line(p)
        if self.tty:
            self._line(head, p.phase == "done")
        else:
            self.say(head)
