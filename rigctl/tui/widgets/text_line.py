"""A Static for text that changes every poll: repaints only when the text changed, and asks
for a new layout only when the text needs another number of rows.

Static.update() re-lays out the whole screen by default; at one update per widget per second
that layout pass was most of the TUI's CPU beside vLLM (benchmarks/bench_tui.py).
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static


def rows_needed(plain: str, width: int) -> int:
    if width <= 0:
        return 0
    return sum(max(1, -(-cell_len(line) // width)) for line in plain.split("\n"))


class TextLine(Static):
    def __init__(self, text: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(text, id=id, classes=classes)
        self._plain = text
        self._width = 0

    def set_text(self, text: str | Text) -> None:
        plain = text if isinstance(text, str) else text.plain
        width = self.content_region.width
        if plain == self._plain and width == self._width and isinstance(text, str):
            return
        relayout = width != self._width or rows_needed(plain, width) != rows_needed(self._plain, width)
        self._plain, self._width = plain, width
        self.update(text, layout=relayout)

    @property
    def text(self) -> str:
        return self._plain
