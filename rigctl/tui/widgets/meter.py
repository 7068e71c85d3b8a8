"""A one-line labelled bar that fills whatever width it gets."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from rigctl import fmt


class Meter(Widget):
    DEFAULT_CSS = """
    Meter { height: 1; width: 1fr; }
    Meter.-warm { color: $warning; }
    Meter.-hot { color: $error; }
    Meter.-na { color: $text-muted; }
    """

    label: reactive[str] = reactive("")
    fraction: reactive[float | None] = reactive(None)
    text: reactive[str] = reactive("n/a")

    def __init__(self, label: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = label

    def render(self) -> Text:
        width = self.size.width
        bar_width = max(3, width - len(self.label) - len(self.text) - 2)
        out = Text(f"{self.label} ", style="bold")
        out.append(fmt.bar(self.fraction, bar_width))
        out.append(f" {self.text}")
        return out
