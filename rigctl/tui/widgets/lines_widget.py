"""A widget made of text lines that repaints only the lines that changed.

Textual renders a widget's whole content again whenever any part of it is dirty, then runs
each dirty line through its style pipeline (border, padding, filters). This widget renders
line by line instead (Textual's line API): a GPU card whose clocks moved but whose VRAM did
not builds one strip, not five, and the other lines come from a cache
(benchmarks/bench_tui.py).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget


class LinesWidget(Widget):
    SIZED_BY_LINES = True  # False: the height comes from CSS, so more lines need no new layout

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[Text] = []
        self._built_for: tuple[int, str] = (-1, "")
        # Per line: the Text and base style a strip was made from, and the strip.
        self._strips: dict[int, tuple[Text, Style, Strip]] = {}
        self._base_style: Style | None = None
        self._behind = False  # updated while its screen was not shown: built when it is (catch_up)

    def notify_style_update(self) -> None:
        self._base_style = None  # classes, theme or an ancestor's CSS changed
        super().notify_style_update()

    @property
    def base_style(self) -> Style:
        """The widget's colours from CSS: Textual walks every ancestor to compute them, so once."""
        if self._base_style is None:
            self._base_style = self.rich_style
        return self._base_style

    def build_lines(self, width: int) -> list[Text]:
        """The lines to show at `width` cells (subclasses)."""
        raise NotImplementedError

    def update_lines(self) -> None:
        """Rebuild the lines; repaint the changed ones, re-layout only if their number changed.
        Not while its screen is hidden (another screen over it): the figures it was given are kept,
        and the lines are built once, when the screen is shown again (catch_up), so the dashboard
        costs nothing a second behind the trends screen or the log (benchmarks/bench_tui.py)."""
        if self.is_attached and not self.screen.is_current:
            self._behind = True
            return
        self._behind = False
        width = self.content_size.width
        lines = self.build_lines(width)
        old = self._lines
        changed: list[Region] = []
        for y, line in enumerate(lines):
            if y < len(old) and old[y] == line:
                lines[y] = old[y]  # the same object: its cached strip stays valid
            else:
                changed.append(Region(0, y, max(1, width), 1))
        changed.extend(Region(0, y, max(1, width), 1) for y in range(len(lines), len(old)))
        self._lines = lines
        self._built_for = (width, self.app.theme)
        if len(lines) != len(old) and self.SIZED_BY_LINES:
            self.refresh(layout=True)
        elif changed:
            self.refresh(*changed)

    def catch_up(self) -> None:
        """Build what was given while the screen was hidden (its screen calls this as it is shown)."""
        if self._behind:
            self.update_lines()

    def _current_lines(self) -> list[Text]:
        width = self.content_size.width
        if self._built_for != (width, self.app.theme):  # resized or re-themed
            self._lines = self.build_lines(width)
            self._built_for = (width, self.app.theme)
        return self._lines

    def on_resize(self) -> None:
        self._current_lines()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return max(1, len(self._lines))

    def render_line(self, y: int) -> Strip:
        lines = self._current_lines()
        width = self.size.width
        base = self.base_style
        if y >= len(lines):
            return Strip.blank(width, base)
        line = lines[y]
        cached = self._strips.get(y)
        if cached is not None and cached[0] is line and cached[1] == base:
            return cached[2]
        console = self.app.console
        # Rich leaves a Text's own style off its segments when it has no spans: add it here.
        style = base + console.get_style(line.style) if line.style else base
        segments = Segment.apply_style(line.render(console, end=""), style=style)
        strip = Strip(segments).crop_extend(0, width, base)
        self._strips[y] = (line, base, strip)
        return strip
