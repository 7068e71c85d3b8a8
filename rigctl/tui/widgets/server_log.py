"""The server's log: a line-API Log (only visible lines render) with errors highlighted."""

from __future__ import annotations

import re

from rich.highlighter import Highlighter
from rich.text import Text
from textual.widgets import Log

ERROR = re.compile(r"\b(ERROR|CRITICAL|Traceback|Error:|Exception|OutOfMemoryError|failed)\b")
WARNING = re.compile(r"\bWARNING\b")
MAX_LINES = 5000


class LogHighlighter(Highlighter):
    def highlight(self, text: Text) -> None:
        plain = text.plain
        if ERROR.search(plain):
            text.stylize("bold red")
        elif WARNING.search(plain):
            text.stylize("yellow")
        elif "Application startup complete" in plain or "KV cache size" in plain:
            text.stylize("green")


class ServerLog(Log):
    def __init__(self, *, id: str | None = None, max_lines: int = MAX_LINES) -> None:
        super().__init__(highlight=True, max_lines=max_lines, id=id, auto_scroll=True)
        self.highlighter = LogHighlighter()
