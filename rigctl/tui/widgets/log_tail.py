"""A followed server log: a title and a view, fed by a TailReader while shown.

Full-screen with scrollback on the log screen (ServerLog), read by a thread of its own; a
tail of what fits on a tall dashboard (TailView), read by the app's poll loop in the same
tick as the GPUs and /metrics, so the dashboard still repaints once a second. Reads batch:
at most BATCH lines each, so a flood shows its newest lines and the file keeps the rest.
"""

from __future__ import annotations

import re

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from textual.worker import get_current_worker

from rigctl.config import Settings
from rigctl.serve.launchers import LogFollower, launcher_for
from rigctl.serve.logfollow import FileFollower
from rigctl.serve.record import ServerRecord, read_record
from rigctl.tui.messages import LogLines
from rigctl.tui.widgets.server_log import ServerLog
from rigctl.tui.widgets.tail_view import TailView

BATCH = 2000
BACKLOG_BYTES = 256 * 1024  # where a viewer starts in a long log: far more than a screen of lines
# uvicorn's access lines for what rigctl itself asks every second: noise in a tail that is
# there to show what vLLM says. The log screen and the file keep them.
OWN_POLLS = re.compile(r'"GET /(?:metrics|health|v1/models|version) HTTP/1\.[01]" 200')
# Seconds between reads. Each read that finds lines scrolls and repaints the visible tail,
# so this sets the tail's CPU cost beside vLLM (benchmarks/bench_tui.py): a panel on the
# dashboard reads once a second, like everything else there; the log screen twice.
SCREEN_READ_EVERY = 0.5


class TailReader:
    """What the log of the server rigctl started says next; follows the next server's log
    when the state file names another one. Not thread-safe: one reader thread at a time."""

    def __init__(self, settings: Settings, hide_own_polls: bool = False) -> None:
        self.settings = settings
        self.hide_own_polls = hide_own_polls
        self._record: ServerRecord | None = None
        self._follower: LogFollower | None = None
        self._started = False
        self.broken = False  # set by a reader that hit an error: it reads no more

    def read(self) -> tuple[str | None, list[str]]:
        """(a new title when the followed log changed, else None; the new lines, at most BATCH)."""
        title = None
        current = read_record()
        if current != self._record or not self._started:
            self._started = True
            self.close()
            self._record = current
            self._follower = launcher_for(current, self.settings).follower(current) if current else None
            if isinstance(self._follower, FileFollower):
                self._follower.skip_to_tail(BACKLOG_BYTES)
            title = (f"server log: {current.log_path or current.launcher}" if current else
                     "server log: no server started by rigctl yet")
        lines = self._follower.read_new() if self._follower else []
        if lines and self.hide_own_polls:
            lines = [line for line in lines if not OWN_POLLS.search(line)]
        return title, lines[-BATCH:]

    def close(self) -> None:
        if self._follower:
            self._follower.close()
            self._follower = None


class LogTail(Vertical):
    def __init__(self, settings: Settings, *, id: str, read_every: float | None, scrollback: int = 0,
                 hide_own_polls: bool = False) -> None:
        """`scrollback`: lines kept for scrolling (a full log view); 0: a tail of what fits.
        `read_every`: seconds between reads by a thread of its own; None: while it follows,
        `reader` is there for the app's poll loop to read, and show() takes what it read."""
        super().__init__(id=id, classes="log-tail")
        self.settings = settings
        self.scrollback = scrollback
        self.read_every = read_every
        self.hide_own_polls = hide_own_polls
        self.following = False
        self.reader: TailReader | None = None

    def compose(self) -> ComposeResult:
        yield Static("server log", classes="log-title")
        yield ServerLog(max_lines=self.scrollback) if self.scrollback else TailView()

    def follow(self, on: bool) -> None:
        """Start or stop the reader thread (screens call this as they show and hide)."""
        if on and not self.following:
            self.following = True
            if self.read_every is None:
                self.reader = TailReader(self.settings, self.hide_own_polls)  # closed by its reader
            else:
                self._follow(self.read_every)
        elif not on and self.following:
            self.following = False
            self.reader = None
            self.workers.cancel_group(self, "follow-log")

    @property
    def view(self) -> ServerLog | TailView:
        return self.query_one(ServerLog) if self.scrollback else self.query_one(TailView)

    def clear(self) -> None:
        self.view.clear()

    @work(thread=True, exclusive=True, group="follow-log", exit_on_error=False, description="Following the log")
    def _follow(self, every: float) -> None:
        worker = get_current_worker()
        reader = TailReader(self.settings, self.hide_own_polls)
        try:
            while not worker.is_cancelled:
                title, lines = reader.read()
                if title is not None:
                    self.app.call_from_thread(self._retitle, title)
                if lines:
                    self.post_message(LogLines(lines))
                worker.cancelled_event.wait(every)
        finally:
            reader.close()

    def show(self, reader: TailReader, title: str | None, lines: list[str]) -> None:
        """What the poll loop read with `reader`; dropped if the tail stopped following since."""
        if reader is not self.reader:
            return
        if title is not None:
            self.view.clear()  # a fresh reader starts again from the log's last lines
            self._retitle(title)
        if lines:
            self.view.write_lines(lines)

    def _retitle(self, title: str) -> None:
        self.query_one(".log-title", Static).update(title)

    def on_log_lines(self, message: LogLines) -> None:
        message.stop()
        self.view.write_lines(message.lines)
