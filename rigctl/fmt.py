"""Units people read, shared by the CLI and the TUI: GiB, W, thousands separators.

Pure string functions; None always renders as "n/a", and so does a NaN or an infinity (an
exposition may carry them; a figure no one can read is not a figure).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeGuard

from rigctl.units import GIB, MIB

NA = "n/a"


def known(value: float | None) -> TypeGuard[float]:
    """A number to show: not None, not NaN, not an infinity (those show as n/a)."""
    return value is not None and (not isinstance(value, float) or math.isfinite(value))


def gib(value: float | None, digits: int = 1) -> str:
    return NA if not known(value) else f"{value / GIB:.{digits}f} GiB"


def gib_pair(used: float | None, total: float | None) -> str:
    if not known(used) or not known(total):
        return NA
    return f"{used / GIB:.1f}/{total / GIB:.1f} GiB"


def mib(value: float | None) -> str:
    return NA if not known(value) else f"{value / MIB:,.0f} MiB"


def watts(value: float | None) -> str:
    return NA if not known(value) else f"{value:.0f} W"


def pct(value: float | None, digits: int = 1) -> str:
    """A percentage given as 0..100."""
    return NA if not known(value) else f"{value:.{digits}f}%"


def frac_pct(value: float | None, digits: int = 1) -> str:
    """A percentage given as a fraction 0..1."""
    return NA if not known(value) or not known(value * 100) else f"{value * 100:.{digits}f}%"


def celsius(value: float | None) -> str:
    return NA if not known(value) else f"{value:.0f}°C"


def mhz(value: int | None) -> str:
    return NA if not known(value) else f"{value} MHz"


def count(value: float | None) -> str:
    """Tokens and other counts with thousands separators."""
    return NA if not known(value) else f"{value:,.0f}"


def number(value: float | None, digits: int = 1, unit: str = "") -> str:
    return NA if not known(value) else f"{value:,.{digits}f}{unit}"


def seconds(value: float | None) -> str:
    if not known(value):
        return NA
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 120:
        return f"{value:.1f} s"
    return f"{value / 60:.1f} min"


def latency(value: float | None) -> str:
    """Request latencies, where a millisecond is a real difference: 3 significant figures."""
    if not known(value):
        return NA
    if value < 1:
        ms = value * 1000
        return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"
    return f"{value:.2f} s" if value < 100 else f"{value:.0f} s"


def rate(bytes_per_s: float | None) -> str:
    """A bus rate, short: 2.4G, 310M, 12K (bytes a second), n/a when unknown."""
    if not known(bytes_per_s):
        return "n/a"
    for unit, size in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if bytes_per_s >= size:
            return f"{bytes_per_s / size:.1f}{unit}" if bytes_per_s < 10 * size else f"{bytes_per_s / size:.0f}{unit}"
    return f"{bytes_per_s:.0f}"


def pcie(gen: int | None, width: int | None) -> str:
    g = NA if not known(gen) else f"Gen{gen}"
    w = NA if not known(width) else f"x{width}"
    return f"{g} {w}"


def bar(fraction: float | None, width: int) -> str:
    """A text bar of `width` cells; empty when the value is unknown."""
    if not known(fraction):
        return "·" * width
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "░" * (width - filled)


def table(rows: Sequence[Sequence[str]], align: str = "") -> str:
    """Rows as text columns two spaces apart, trailing blanks cut. `align` holds one character a
    column, `<` (the default), `^` or `>`; the CLI's every table goes through here."""
    if not rows:
        return ""
    count = max(len(row) for row in rows)
    widths = [max((len(row[c]) for row in rows if c < len(row)), default=0) for c in range(count)]
    how = align.ljust(count, "<")
    return "\n".join("  ".join(f"{cell:{how[c]}{widths[c]}}" for c, cell in enumerate(row)).rstrip() for row in rows)
