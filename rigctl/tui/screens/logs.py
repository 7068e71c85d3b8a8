"""The log screen (l): the server's log tail, followed while the screen is shown; vLLM's own words
by default (rigctl's polling lines hidden: `o` shows them), `w` for warnings and errors only,
`/` to search and `n` for the next match."""

from __future__ import annotations

import dataclasses

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Input

from rigctl.config import Settings
from rigctl.tui.widgets.log_tail import SCREEN_READ_EVERY, LogTail
from rigctl.tui.widgets.server_log import MAX_LINES, ServerLog


class LogScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back", show=False, tooltip="back to the dashboard (or out of the search)"),
        Binding("o", "own_polls", "Polls", tooltip="show or hide rigctl's own /metrics, /health and /v1/models lines"),
        Binding("w", "problems", "Warn+err", tooltip="warnings and errors only, or every line"),
        Binding("slash", "search", "Search", tooltip="search the log; n jumps to the next match"),
        Binding("n", "next_match", "Next", show=False, tooltip="the next line the search matches (wraps around)"),
        Binding("c", "clear", "Clear", show=False, tooltip="clear the view (the log file keeps every line)"),
    ]

    def __init__(self, settings: Settings) -> None:
        super().__init__(id="logs")
        self.settings = settings
        self.current_match = -1  # the line of the view the search last went to (-1: none yet)

    def compose(self) -> ComposeResult:
        yield LogTail(self.settings, id="log-screen-tail", scrollback=MAX_LINES, read_every=SCREEN_READ_EVERY, hide_own_polls=True)
        yield Input(placeholder="search the log (enter; escape to leave)", id="log-search")
        yield Footer()

    @property
    def tail(self) -> LogTail:
        return self.query_one(LogTail)

    def on_screen_resume(self) -> None:
        self.tail.follow(True)

    def on_screen_suspend(self) -> None:
        self.tail.follow(False)

    def action_clear(self) -> None:
        self.tail.clear()

    def action_own_polls(self) -> None:
        self.tail.set_filter(dataclasses.replace(self.tail.filter, show_own_polls=not self.tail.filter.show_own_polls))

    def action_problems(self) -> None:
        self.tail.set_filter(dataclasses.replace(self.tail.filter, problems_only=not self.tail.filter.problems_only))

    def action_search(self) -> None:
        box = self.query_one("#log-search", Input)
        box.add_class("-open")
        box.value = self.tail.filter.search
        box.focus()

    async def action_back(self) -> None:
        box = self.query_one("#log-search", Input)
        if box.has_class("-open"):
            box.remove_class("-open")
            self.tail.view.focus()
        else:
            await self.run_action("app.show_dashboard")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        event.input.remove_class("-open")
        self.tail.set_filter(dataclasses.replace(self.tail.filter, search=event.value.strip()))
        view = self.tail.view
        if isinstance(view, ServerLog):
            view.auto_scroll = not self.tail.filter.search  # a match stays in view while lines arrive
        self.current_match = -1
        self.tail.view.focus()
        self.action_next_match()

    def action_next_match(self) -> None:
        """Scroll to the next line of the view the search matches, after the last one gone to."""
        view, wanted = self.tail.view, self.tail.filter
        if not wanted.search or not isinstance(view, ServerLog):
            self.notify("nothing searched yet: / to search", severity="information", timeout=3)
            return
        lines = view.lines
        order = list(range(self.current_match + 1, len(lines))) + list(range(self.current_match + 1))
        found = next((i for i in order if wanted.matches(lines[i])), None)
        if found is None:
            self.notify(f"{wanted.search!r} is not in the lines shown", severity="warning", timeout=4)
            return
        self.current_match = found
        view.scroll_to(y=max(0, found - view.size.height // 2), animate=False)
