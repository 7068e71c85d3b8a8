"""The log screen (l): the server's log tail, followed while the screen is shown."""

from __future__ import annotations

import time

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from rigctl.config import Settings
from rigctl.serve.launchers import launcher_for
from rigctl.serve.record import read_record
from rigctl.tui.messages import LogLines
from rigctl.tui.widgets.server_log import ServerLog

BATCH = 2000  # at most this many lines per 0.2 s reach the widget


class LogScreen(Screen[None]):
    BINDINGS = [Binding("escape", "app.show_dashboard", "Back", show=False),
                Binding("c", "clear", "Clear")]

    def __init__(self, settings: Settings) -> None:
        super().__init__(id="logs")
        self.settings = settings
        self.following: str | None = None

    def compose(self) -> ComposeResult:
        yield Static("server log", id="log-title")
        yield ServerLog(id="server-log")
        yield Footer()

    def on_screen_resume(self) -> None:
        self._follow()

    def on_screen_suspend(self) -> None:
        self.workers.cancel_group(self, "follow-log")

    def action_clear(self) -> None:
        self.query_one(ServerLog).clear()

    @work(thread=True, exclusive=True, group="follow-log", exit_on_error=False, description="Following the log")
    def _follow(self) -> None:
        worker = get_current_worker()
        follower, record = None, None
        while not worker.is_cancelled:
            current = read_record()
            if current != record:
                if follower:
                    follower.close()
                record = current
                follower = launcher_for(record, self.settings).follower(record) if record else None
                self.app.call_from_thread(self._retitle, record.log_path or record.launcher if record else None)
            lines = follower.read_new() if follower else []
            if lines:
                self.post_message(LogLines(lines[-BATCH:]))  # a flood shows its newest lines; the file keeps all
            time.sleep(0.2)
        if follower:
            follower.close()

    def _retitle(self, source: str | None) -> None:
        self.query_one("#log-title", Static).update(f"server log: {source}" if source else "no server started yet")

    def on_log_lines(self, message: LogLines) -> None:
        self.query_one(ServerLog).write_lines(message.lines)
