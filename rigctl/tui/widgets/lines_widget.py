"""A widget made of text lines that repaints only the lines that changed.

Textual re-renders every line of a refreshed widget through its style pipeline (border,
padding, filters): about half a millisecond a line here. A GPU card whose clocks moved but
whose VRAM did not repaints one line, not seven (benchmarks/bench_tui.py).
"""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Region, Size
from textual.widget import Widget


class LinesWidget(Widget):
    SIZED_BY_LINES = True  # False: the height comes from CSS, so more lines need no new layout

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[Text] = []
        self._built_for: tuple[int, str] = (-1, "")

    def build_lines(self, width: int) -> list[Text]:
        """The lines to show at `width` cells (subclasses)."""
        raise NotImplementedError

    def update_lines(self) -> None:
        """Rebuild the lines; repaint the changed ones, re-layout only if their number changed."""
        width = self.content_size.width
        lines = self.build_lines(width)
        old, self._lines = self._lines, lines
        self._built_for = (width, self.app.theme)
        if len(lines) != len(old) and self.SIZED_BY_LINES:
            self.refresh(layout=True)
            return
        changed = [Region(0, y, max(1, width), 1) for y in range(max(len(old), len(lines)))
                   if y >= len(old) or y >= len(lines) or old[y] != lines[y]]
        if changed:
            self.refresh(*changed)

    def on_resize(self) -> None:
        self._lines = self.build_lines(self.content_size.width)
        self._built_for = (self.content_size.width, self.app.theme)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return max(1, len(self._lines))

    def render(self) -> Text:
        if self._built_for != (self.content_size.width, self.app.theme):  # resized or re-themed
            self._lines = self.build_lines(self.content_size.width)
            self._built_for = (self.content_size.width, self.app.theme)
        return Text("\n").join(self._lines)
