"""A run's arms as bars of its gate metric, in the order they ran: the candidate between its two
controls at a glance (a drift between the controls shows as two unequal control bars)."""

from __future__ import annotations

from typing import Any

from rigctl.bench.metrics import METRICS
from rigctl.bench.report import value_text

FULL, EMPTY = "█", "░"


def arm_bars(data: dict[str, Any], width: int) -> list[str]:
    """A line an arm: its number, role, profile, a bar of the gate metric against the highest arm's,
    and the figure; an arm without the figure says n/a (an empty bar, never a zero-length one)."""
    metric = METRICS[data["gate"]["metric"]]
    arms = data.get("arms", [])
    values = [a.get(data["gate"]["metric"]) for a in arms]
    known = [v for v in values if isinstance(v, (int, float))]
    top = max(known) if known else 0.0
    labels = [f"{i} {a.get('role', '?'):<9} {a.get('profile', '?')}" for i, a in enumerate(arms, start=1)]
    figures = [value_text(metric, v) if isinstance(v, (int, float)) else "n/a" for v in values]
    left = max((len(label) for label in labels), default=0) + 1
    right = max((len(f) for f in figures), default=0) + 1
    room = max(4, width - left - right - 1)
    lines = [f"{metric.label} by arm (the gate):"]
    for label, value, figure in zip(labels, values, figures, strict=True):
        filled = round(value / top * room) if isinstance(value, (int, float)) and top > 0 else 0
        lines.append(f"{label:<{left}}{FULL * filled}{EMPTY * (room - filled)} {figure:>{right}}")
    return lines
