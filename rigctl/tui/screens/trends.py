"""The trends screen (g): what the serving record holds, over a window the owner picks (1 1 h,
2 24 h, 3 7 d, 4 30 d): KV usage and peak resident context, the prefix-cache hit rate, TTFT p50 and p95,
output tok/s, power and J/token, one chart each, with the switches and bench runs marked. Read
from the record by SQL (rigctl/record/trends.py) off the UI thread, again every RELOAD_S while
the screen is shown, never while it is not (the dashboard pays nothing for it)."""

from __future__ import annotations

import time

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Static

from rigctl import fmt
from rigctl.errors import RigctlError
from rigctl.record.reader import RecordReader
from rigctl.record.trends import WINDOWS, Figure, Trends
from rigctl.tui.chart import chart, mark_line, time_axis
from rigctl.tui.worker_errors import SaysWorkerErrors

RELOAD_S = 10.0
CHART_LINES = 3
TITLES: dict[Figure, str] = {
    "kv": "KV cache usage (peak)",
    "hit_rate": "prefix-cache hit rate",
    "ttft_p50": "TTFT p50",
    "ttft_p95": "TTFT p95",
    "tok_s": "output tok/s",
    "power": "power (serving GPUs)",
    "j_per_token": "J/token",
}


def _value(figure: Figure, value: float | None) -> str:
    if value is None:
        return "n/a"
    if figure in ("kv", "hit_rate"):
        return f"{value:.0%}"
    if figure in ("ttft_p50", "ttft_p95"):
        return fmt.latency(value)
    if figure == "power":
        return f"{value:.0f} W"
    return f"{value:,.1f}" if figure == "tok_s" else f"{value:.2f}"


def render_trends(trends: Trends, width: int) -> list[Text]:
    """The charts, as the screen shows them: marks, then a title line and a chart a figure, then the axis."""
    lines = [
        Text(
            mark_line(
                trends.since, trends.until, width, [(m.ts, f"bench {m.bench}" if m.bench else m.profile) for m in trends.marks]
            ),
            style="bold",
        )
    ]
    for figure, title in TITLES.items():
        values = trends.series[figure]
        known = [v for v in values if v is not None]
        last = next((v for v in reversed(values) if v is not None), None)
        said = f"{title}: now {_value(figure, last)}, high {_value(figure, max(known) if known else None)}"
        if figure == "kv" and trends.peak_resident is not None:
            said += f", peak resident context {trends.peak_resident:,} tokens"
        lines.append(Text(said[:width], style="bold"))
        top = 1.0 if figure in ("kv", "hit_rate") else None
        if figure in ("ttft_p50", "ttft_p95"):  # one scale for both: the p50 is read against the p95
            top = max((v for v in trends.series["ttft_p95"] if v is not None), default=None)
        lines += [Text(line) for line in chart(values, width, CHART_LINES, top)]
    lines.append(Text(time_axis(trends.since, trends.until, width), style="dim"))
    return lines


class TrendsScreen(SaysWorkerErrors, Screen[None]):
    BINDINGS = [
        Binding("escape", "app.show_dashboard", "Back", show=False, tooltip="back to the dashboard"),
        Binding("1", "window('1h')", "1h", show=False, tooltip="the last hour"),
        Binding("2", "window('24h')", "24h", show=False, tooltip="the last day"),
        Binding("3", "window('7d')", "7d", show=False, tooltip="the last week"),
        Binding("4", "window('30d')", "30d", show=False, tooltip="the last 30 days"),
    ]

    def __init__(self, id: str | None = None, clock: object = time.time) -> None:
        super().__init__(id=id)
        self.window = "24h"
        self.clock = clock
        self.trends: Trends | None = None
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="trends-title", markup=False)
        with VerticalScroll(id="trends-scroll"):
            yield Static("reading the serving record...", id="trends-charts", markup=False)
        yield Footer()

    def on_screen_resume(self) -> None:
        self.reload()
        self._timer = self.set_interval(RELOAD_S, self.reload)

    def on_screen_suspend(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def on_resize(self) -> None:
        self._draw()

    def action_window(self, window: str) -> None:
        self.window = window
        self.reload()

    def reload(self) -> None:
        self.query_one("#trends-title", Static).update(
            f"the last {self.window} (1 2 3 4: 1h 24h 7d 30d); ▼ a switch or a bench; · no data"
        )
        self._read(self.window)

    @work(thread=True, exclusive=True, group="trends", exit_on_error=False, description="Reading the serving record")
    def _read(self, window: str) -> None:
        until = self.clock()  # type: ignore[operator]
        try:
            trends: Trends | str = RecordReader().trends(until - WINDOWS[window], until)
        except RigctlError as exc:
            trends = str(exc)
        self.app.call_from_thread(self._shown, trends)

    def _shown(self, trends: Trends | str) -> None:
        if isinstance(trends, str):
            self.query_one("#trends-charts", Static).update(f"the serving record cannot be read: {trends}")
            return
        self.trends = trends
        benches = sorted({m.bench for m in trends.marks if m.bench})
        if benches:  # their arms are marked, and their traffic is not the owner's: said, not silently dropped
            self.query_one("#trends-title", Static).update(
                f"the last {self.window} (1 2 3 4: 1h 24h 7d 30d); ▼ a switch or a bench; · no data; "
                f"the traffic of bench {', '.join(benches)} is left out (rigctl report --bench)"
            )
        self._draw()

    def _draw(self) -> None:
        trends, charts = self.trends, self.query_one("#trends-charts", Static)
        if trends is None:
            return
        if trends.empty:
            charts.update(
                f"nothing recorded in the last {self.window}: the TUI records while it runs, `rigctl watch` while it does not"
            )
            return
        width = max(20, self.size.width - 2)
        charts.update(Text("\n").join(render_trends(trends, width)))
