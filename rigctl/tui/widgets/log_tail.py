"""A followed server log: a title and a view, fed by a reader thread while shown.

Full-screen with scrollback on the log screen (ServerLog); a tail of what fits on a tall
dashboard (TailView). The reader batches:
one message per read, at most BATCH lines, so a flood shows its newest lines and the
file keeps the rest.
"""

from __future__ import annotations

import re

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
from rigctl.tui.widgets.tail_view import TailView

BATCH = 2000
# uvicorn's access lines for what rigctl itself asks every second: noise in a tail that is
# there to show what vLLM says. The log screen and the file keep them.
OWN_POLLS = re.compile(r'"GET /(?:metrics|health|v1/models|version) HTTP/1\.[01]" 200')
# Seconds between reads. Each read that finds lines scrolls and repaints the visible tail,
# so this sets the tail's CPU cost beside vLLM (benchmarks/bench_tui.py): a panel on the
# dashboard reads once a second, like everything else there; the log screen twice.
DASHBOARD_READ_EVERY = 1.0
SCREEN_READ_EVERY = 0.5


class LogTail(Vertical):
    def __init__(self, settings: Settings, *, id: str, read_every: float, scrollback: int = 0,
                 hide_own_polls: bool = False) -> None:
        """`scrollback`: lines kept for scrolling (a full log view); 0: a tail of what fits."""
        super().__init__(id=id, classes="log-tail")
        self.settings = settings
        self.scrollback = scrollback
        self.read_every = read_every
        self.hide_own_polls = hide_own_polls
        self.following = False

    def compose(self) -> ComposeResult:
        yield Static("server log", classes="log-title")
        yield ServerLog(max_lines=self.scrollback) if self.scrollback else TailView()

    def follow(self, on: bool) -> None:
        """Start or stop the reader thread (screens call this as they show and hide)."""
        if on and not self.following:
            self.following = True
            self._follow()
        elif not on and self.following:
            self.following = False
            self.workers.cancel_group(self, "follow-log")

    @property
    def view(self) -> ServerLog | TailView:
        return self.query_one(ServerLog) if self.scrollback else self.query_one(TailView)

    def clear(self) -> None:
        self.view.clear()

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
            if lines and self.hide_own_polls:
                lines = [line for line in lines if not OWN_POLLS.search(line)]
            if lines:
                self.post_message(LogLines(lines[-BATCH:]))
            worker.cancelled_event.wait(self.read_every)
        if follower:
            follower.close()

    def _retitle(self, title: str) -> None:
        self.query_one(".log-title", Static).update(title)

    def on_log_lines(self, message: LogLines) -> None:
        message.stop()
        self.view.write_lines(message.lines)
