"""The log screen (l): the server's log tail, followed while the screen is shown."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer

from rigctl.config import Settings
from rigctl.tui.widgets.log_tail import SCREEN_READ_EVERY, LogTail
from rigctl.tui.widgets.server_log import MAX_LINES


class LogScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "app.show_dashboard", "Back", show=False, tooltip="back to the dashboard"),
        Binding("c", "clear", "Clear", tooltip="clear the view (the log file keeps every line)"),
    ]

    def __init__(self, settings: Settings) -> None:
        super().__init__(id="logs")
        self.settings = settings

    def compose(self) -> ComposeResult:
        yield LogTail(self.settings, id="log-screen-tail", scrollback=MAX_LINES, read_every=SCREEN_READ_EVERY)
        yield Footer()

    def on_screen_resume(self) -> None:
        self.query_one(LogTail).follow(True)

    def on_screen_suspend(self) -> None:
        self.query_one(LogTail).follow(False)

    def action_clear(self) -> None:
        self.query_one(LogTail).clear()
