"""Bars and sparklines as Rich Text, sized to the cells they get.

Sparklines use a fixed scale: Textual's Sparkline scales between the data's own min and max,
which turns 2 W of idle noise into full-height bars; a GPU's history reads right only
against 0..limit.
"""

from __future__ import annotations

from functools import lru_cache

from rich.style import Style
from rich.text import Span, Text
from textual.app import App
from textual.color import Color, ColorParseError

from rigctl import fmt

BLOCKS = " ▁▂▃▄▅▆▇█"


def spark(values: tuple[float, ...], width: int, top: float) -> str:
    """The last `width` values as block characters, 0..top."""
    if width <= 0:
        return ""
    tail = values[-width:]
    scale = top if top > 0 else (max(tail) if tail else 1.0) or 1.0
    chars = [BLOCKS[min(8, max(0, round(v / scale * 8)))] for v in tail]
    return " " * (width - len(chars)) + "".join(chars)


# Lines are built as one string plus spans: Text.append() re-measures the text on every call,
# and these lines are rebuilt every second (benchmarks/bench_tui.py).


def meter_line(label: str, fraction: float | None, text: str, width: int, style: Style | str) -> Text:
    bar_width = max(3, width - len(label) - len(text) - 2)
    start = len(label) + 1
    bar = fmt.bar(fraction, bar_width)
    return Text(f"{label} {bar} {text}", style="bold", spans=[Span(start, start + len(bar), style)])


def spark_pair(power: tuple[float, ...], limit: float, util: tuple[float, ...], width: int, style: Style | str) -> Text:
    half = max(0, (width - 1) // 2)
    parts: list[str] = []
    spans: list[Span] = []
    at = 0
    for label, values, top in (("W", power, limit), ("%", util, 100.0)):
        line = spark(values, half - 2, top)
        spans += [Span(at, at + 2, "dim"), Span(at + 2, at + 2 + len(line), style)]
        parts.append(f"{label} {line} ")
        at += len(parts[-1])
    return Text("".join(parts).rstrip(), spans=spans)


LEVEL_COLOURS = {"-warm": "warning", "-hot": "error"}


def theme_style(app: App[object], variable: str) -> Style:
    """A theme colour ("accent", "warning", ...) as a Rich style. Theme values are Textual
    colours, which Rich cannot always read itself (the ANSI themes say "ansi_green")."""
    return _style_of(app.theme_variables.get(variable, ""))


@lru_cache(maxsize=64)
def _style_of(value: str) -> Style:
    """Parsed once per colour: cards ask for the same few colours every second."""
    if not value:
        return Style()
    try:
        return Style(color=Color.parse(value).rich_color)
    except ColorParseError:
        return Style()


def level_style(app: App[object], css_level: str) -> Style:
    """The style of a threshold level from tui.format.level(): warning, error, dim for n/a."""
    if css_level == "-na":
        return Style(dim=True)
    variable = LEVEL_COLOURS.get(css_level)
    return theme_style(app, variable) if variable else Style()
