"""Charts as lines of text: a figure over time drawn in block characters, "no data" drawn
differently from zero, the time axis labelled and the switches marked. Pure (no Textual): the
trends screen renders what this returns, and tests read it as the terminal would show it."""

from __future__ import annotations

import time
from collections.abc import Sequence

BLOCKS = " ▁▂▃▄▅▆▇█"
NO_DATA = "·"


def columns(values: Sequence[float | None], width: int) -> list[float | None]:
    """`values` fitted to `width` columns: the highest of the values a column stands for (a peak
    must not vanish in a narrow chart), None where none of them was recorded."""
    if not values or width <= 0:
        return []
    out: list[float | None] = []
    for column in range(width):
        lo = column * len(values) // width
        hi = max(lo + 1, (column + 1) * len(values) // width)
        seen = [v for v in values[lo:hi] if v is not None]
        out.append(max(seen) if seen else None)
    return out


def chart(values: Sequence[float | None], width: int, height: int, top: float | None = None) -> list[str]:
    """`height` lines of `width` characters, the bottom line last. A column's bar rises in eighths of
    a line to its value over `top` (the highest value when not given); a recorded zero is the
    lowest block, a column with no data a dot."""
    fitted = columns(values, width)
    known = [v for v in fitted if v is not None]
    ceiling = top if top else (max(known) if known else 0.0)
    rows = [[" "] * len(fitted) for _ in range(height)]
    for x, value in enumerate(fitted):
        if value is None:
            rows[-1][x] = NO_DATA
            continue
        eighths = max(1, round(value / ceiling * height * 8)) if ceiling > 0 else 1
        for line in range(height):
            level = min(8, eighths - line * 8)
            if level > 0:
                rows[height - 1 - line][x] = BLOCKS[level]
    return ["".join(row) for row in rows]


def time_axis(since: float, until: float, width: int) -> str:
    """The window's start, middle and end under a chart of `width`: hours for a day or less, else dates."""
    form = "%H:%M" if until - since <= 86400 else "%m-%d"
    left, mid, right = (time.strftime(form, time.localtime(t)) for t in (since, (since + until) / 2, until))
    if width < len(left) + len(mid) + len(right) + 4:
        return f"{left}{right.rjust(max(0, width - len(left)))}"
    middle = mid.center(width - len(left) - len(right))
    return f"{left}{middle}{right}"


def mark_line(since: float, until: float, width: int, marks: Sequence[tuple[float, str]]) -> str:
    """Each (time, name) at its column: a ▼ and as much of the name as fits before the next mark."""
    line = [" "] * width
    span = until - since
    placed = sorted((min(width - 1, max(0, int((ts - since) / span * width))), name) for ts, name in marks) if span > 0 else []
    for i, (x, name) in enumerate(placed):
        stop = placed[i + 1][0] if i + 1 < len(placed) else width
        text = f"▼{name}"[: max(1, stop - x - 1)] if stop - x > 1 else "▼"
        for offset, char in enumerate(text):
            if x + offset < width:
                line[x + offset] = char
    return "".join(line)
