"""The last lines of the server log, as many as fit, newest at the bottom: the dashboard's tail.

Not a scrollable log (the log screen is one): a Log widget resizes its virtual area on every
write, and the layout pass that follows cost more than everything else on the dashboard
together (benchmarks/bench_tui.py). Lines longer than the panel end in "…"; the log screen
and the file keep them whole.
"""

from __future__ import annotations

from collections import deque

from rich.text import Text

from rigctl.tui.widgets.lines_widget import LinesWidget
from rigctl.tui.widgets.server_log import LogHighlighter

KEEP = 200  # more than any panel shows


class TailView(LinesWidget):
    SIZED_BY_LINES = False
    DEFAULT_CSS = "TailView { height: 1fr; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._raw: deque[str] = deque(maxlen=KEEP)
        self._highlighter = LogHighlighter()

    @property
    def lines(self) -> list[str]:
        return list(self._raw)

    def write_lines(self, lines: list[str]) -> None:
        self._raw.extend(lines)
        self.update_lines()

    def clear(self) -> None:
        self._raw.clear()
        self.update_lines()

    def build_lines(self, width: int) -> list[Text]:
        shown = list(self._raw)[-max(1, self.content_size.height) :]
        out = []
        for raw in shown:
            line = raw if len(raw) <= width or width < 2 else raw[: width - 1] + "…"
            out.append(self._highlighter(Text(line)))
        return out
