"""A followed server log: a title and a ServerLog, fed by a reader thread while shown.

Used full-screen by the log screen and as a panel on a tall dashboard. The reader batches:
one message per read, at most BATCH lines, so a flood shows its newest lines and the
file keeps the rest.
"""

from __future__ import annotations

import time

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from textual.worker import get_current_worker

from rigctl.config import Settings
from rigctl.serve.launchers import launcher_for
from rigctl.serve.record import read_record
from rigctl.tui.messages import LogLines
from rigctl.tui.widgets.server_log import ServerLog

BATCH = 2000
READ_EVERY = 0.25  # seconds between reads: a tail, not a stream; cheap beside vLLM


class LogTail(Vertical):
    def __init__(self, settings: Settings, *, id: str, max_lines: int) -> None:
        super().__init__(id=id, classes="log-tail")
        self.settings = settings
        self.max_lines = max_lines
        self.following = False

    def compose(self) -> ComposeResult:
        yield Static("server log", classes="log-title")
        yield ServerLog(max_lines=self.max_lines)

    def follow(self, on: bool) -> None:
        """Start or stop the reader thread (screens call this as they show and hide)."""
        if on and not self.following:
            self.following = True
            self._follow()
        elif not on and self.following:
            self.following = False
            self.workers.cancel_group(self, "follow-log")

    def clear(self) -> None:
        self.query_one(ServerLog).clear()

    @work(thread=True, exclusive=True, group="follow-log", exit_on_error=False, description="Following the log")
    def _follow(self) -> None:
        worker = get_current_worker()
        follower, record, first = None, None, True
        while not worker.is_cancelled:
            current = read_record()
            if current != record or first:
                first = False
                if follower:
                    follower.close()
                record = current
                follower = launcher_for(record, self.settings).follower(record) if record else None
                title = (f"server log: {record.log_path or record.launcher}" if record else
                         "server log: no server started by rigctl yet")
                self.app.call_from_thread(self._retitle, title)
            lines = follower.read_new() if follower else []
            if lines:
                self.post_message(LogLines(lines[-BATCH:]))
            time.sleep(READ_EVERY)
        if follower:
            follower.close()

    def _retitle(self, title: str) -> None:
        self.query_one(".log-title", Static).update(title)

    def on_log_lines(self, message: LogLines) -> None:
        message.stop()
        self.query_one(ServerLog).write_lines(message.lines)
