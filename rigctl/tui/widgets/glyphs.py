"""Bars and sparklines as Rich Text, sized to the cells they get.

Sparklines use a fixed scale: Textual's Sparkline scales between the data's own min and max,
which turns 2 W of idle noise into full-height bars; a GPU's history reads right only
against 0..limit.
"""

from __future__ import annotations

from rich.text import Text

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


def meter_line(label: str, fraction: float | None, text: str, width: int, style: str) -> Text:
    bar_width = max(3, width - len(label) - len(text) - 2)
    out = Text(f"{label} ", style="bold")
    out.append(fmt.bar(fraction, bar_width), style=style)
    out.append(f" {text}")
    return out


def spark_pair(power: tuple[float, ...], limit: float, util: tuple[float, ...], width: int, style: str) -> Text:
    half = max(0, (width - 1) // 2)
    out = Text()
    for label, values, top in (("W", power, limit), ("%", util, 100.0)):
        out.append(f"{label} ", style="dim")
        out.append(spark(values, half - 2, top), style=style)
        out.append(" ")
    out.rstrip()
    return out
