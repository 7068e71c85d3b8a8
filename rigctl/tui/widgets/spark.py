"""A labelled sparkline on a fixed scale.

Textual's Sparkline scales between the data's own min and max, which turns 2 W of idle
noise into full-height bars; a GPU's history reads right only against 0..limit.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

BLOCKS = " ▁▂▃▄▅▆▇█"


def spark(values: tuple[float, ...], width: int, top: float) -> str:
    """The last `width` values as block characters, 0..top."""
    if width <= 0:
        return ""
    tail = values[-width:]
    scale = top if top > 0 else (max(tail) if tail else 1.0) or 1.0
    chars = [BLOCKS[min(8, max(0, round(v / scale * 8)))] for v in tail]
    return " " * (width - len(chars)) + "".join(chars)


class Spark(Widget):
    DEFAULT_CSS = """
    Spark { height: 1; width: 1fr; color: $accent; }
    """

    data: reactive[tuple[float, ...]] = reactive(())

    def __init__(self, label: str, top: float, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = label
        self.top = top

    def render(self) -> Text:
        width = self.size.width - len(self.label) - 1
        out = Text(f"{self.label} ", style="dim")
        out.append(spark(self.data, width, self.top))
        return out
