"""The server's log: a line-API Log (only visible lines render) with errors highlighted."""

from __future__ import annotations

from rich.highlighter import Highlighter
from rich.text import Text
from textual.widgets import Log

from rigctl.state.logfilter import level_of

MAX_LINES = 5000


class LogHighlighter(Highlighter):
    search = ""  # a sought word, marked where it appears

    def highlight(self, text: Text) -> None:
        plain = text.plain
        level = level_of(plain)
        if level == "error":
            text.stylize("bold red")
        elif level == "warning":
            text.stylize("yellow")
        elif "Application startup complete" in plain or "KV cache size" in plain:
            text.stylize("green")
        if self.search:
            text.highlight_words([self.search], "reverse", case_sensitive=False)


class ServerLog(Log):
    def __init__(self, *, id: str | None = None, max_lines: int = MAX_LINES) -> None:
        super().__init__(highlight=True, max_lines=max_lines, id=id, auto_scroll=True)
        self.highlighter = LogHighlighter()
