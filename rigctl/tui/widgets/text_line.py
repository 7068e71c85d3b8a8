"""Text that changes every poll (the host and serving bars): wraps rather than cuts, repaints
only when the text changed, and asks for a new layout only when it needs another number of
rows. A Static re-renders and re-lays out on every update() (benchmarks/bench_tui.py)."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text

from rigctl.tui.widgets.lines_widget import LinesWidget


class TextLine(LinesWidget):
    DEFAULT_CSS = "TextLine { height: auto; }"

    def __init__(self, text: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._text = text

    def set_text(self, text: str) -> None:
        if text != self._text:
            self._text = text
            self.update_lines()

    @property
    def text(self) -> str:
        return self._text

    def build_lines(self, width: int) -> list[Text]:
        if width <= 0 or ("\n" not in self._text and cell_len(self._text) <= width):  # fits: wrap() costs more
            return [Text(self._text)]
        return list(Text(self._text).wrap(self.app.console, width))
