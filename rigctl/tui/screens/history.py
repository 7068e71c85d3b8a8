"""The history screen (h): every successful boot rigctl recorded, newest first, with what the
engine reported (KV pool, load time), so profiles are compared on measured figures."""

from __future__ import annotations

import time

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from rigctl import fmt
from rigctl.state.boots import BootRecord, read_all
from rigctl.tui.widgets.columns import clear_with_columns
from rigctl.tui.worker_errors import SaysWorkerErrors

COLUMNS = ("when", "profile", "hash", "KV tokens", "conc", "max len", "GiB", "load s", "boot s")
# below 120 columns: what a boot measured that a switch is judged by, each whole (the rest: 120+)
NARROW_COLUMNS = ("when", "profile", "KV tokens", "max len", "boot s")
WIDE = 120


def history_cells(record: BootRecord) -> tuple[str, ...]:
    when = time.strftime("%m-%d %H:%M", time.localtime(record.when))
    return (
        when,
        record.profile,
        record.profile_hash[:8],
        fmt.count(record.kv_tokens),
        fmt.number(record.max_concurrency, 2, "x"),
        fmt.count(record.max_model_len),
        fmt.number(record.model_load_gib, 1),
        fmt.number(record.model_load_seconds, 1),
        fmt.number(record.boot_seconds, 1),
    )


class HistoryScreen(SaysWorkerErrors, Screen[None]):
    BINDINGS = [
        Binding("escape", "app.show_dashboard", "Back", show=False, tooltip="back to the dashboard"),
        Binding("ctrl+r", "reload", "Reload", tooltip="read history.jsonl again"),
        Binding("1", "tab('boots')", "Boots", tooltip="the boots tab: each boot's KV pool, load time, outcome"),
        Binding("2", "tab('served')", "Served", tooltip="the served tab: what each profile did over 7 days"),
    ]

    records: list[BootRecord] | None = None
    columns: tuple[str, ...] = ()

    def compose(self) -> ComposeResult:
        with TabbedContent(initial="boots", id="history-tabs"):
            with TabPane("Boots (1)", id="boots"):
                yield Static("boots recorded by rigctl (history.jsonl), newest first", id="history-title", markup=False)
                yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
            with TabPane("Served, 7 days (2)", id="served"), VerticalScroll():
                yield Static("reading the serving record...", id="served-report", markup=False)
        yield Footer()

    def action_tab(self, name: str) -> None:
        self.query_one("#history-tabs", TabbedContent).active = name

    def on_screen_resume(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="history", exit_on_error=False, description="Reading boot history")
    def _load(self) -> None:
        records = read_all()
        self.app.call_from_thread(self._show, records)
        self.app.call_from_thread(self._show_served, served_text(width=max(40, self.size.width - 4)))

    def on_resize(self) -> None:
        if self.records is not None and self._columns_for_width() != self.columns:
            self._show(self.records)

    def _columns_for_width(self) -> tuple[str, ...]:
        return COLUMNS if self.size.width >= WIDE else NARROW_COLUMNS

    def _show(self, records: list[BootRecord]) -> None:
        self.records = records
        table = self.query_one("#history-table", DataTable)
        columns = self._columns_for_width()
        self.columns = clear_with_columns(table, columns, self.columns)
        picked = [COLUMNS.index(c) for c in columns]
        for record in reversed(records):
            cells = history_cells(record)
            table.add_row(*(cells[i] for i in picked))
        title = self.query_one("#history-title", Static)
        title.update(
            f"{len(records)} boots recorded by rigctl, newest first"
            if records
            else "no boots recorded yet: a switch that reaches ready adds a row here"
        )

    def _show_served(self, text: str) -> None:
        self.query_one("#served-report", Static).update(Text(text))


def served_text(days: float = 7.0, width: int | None = None) -> str:
    """`rigctl report --since 7d`, as text: what each profile did while it served."""
    from rigctl.config import load_settings
    from rigctl.errors import RigctlError
    from rigctl.record.derive import by_profile, thresholds_of
    from rigctl.record.reader import RecordReader
    from rigctl.record.rows import bench_plan_of
    from rigctl.record.table import render

    reader = RecordReader()
    try:
        rows = reader.rows(since=time.time() - days * 86400)
        limits = thresholds_of(load_settings())
    except RigctlError as exc:
        return str(exc)
    real = [r for r in rows if not bench_plan_of(r.boot)]  # a bench's arms are not how a profile serves
    if not real:
        return (
            f"nothing recorded yet ({reader.path}): the TUI records while it runs, or run `rigctl watch` where nobody keeps it open"
        )
    left_out = "" if len(real) == len(rows) else "\n(the benches' own traffic is left out: rigctl report --bench)"
    columns = by_profile(real, limits=limits)
    # the most recently served profiles, as many as fit `width` whole (a wrapped table is unreadable)
    recent = sorted(columns, key=lambda c: max(r.ts for r in real if r.profile == c.profile), reverse=True)
    for count in range(len(recent), 0, -1):
        kept = [c for c in columns if c in recent[:count]]
        text = render(kept, str(reader.path))
        if width is None or count == 1 or max(len(line) for line in text.splitlines()) <= width:
            break
    more = len(columns) - len(kept)
    hidden = f"\n({more} more profile(s) served this week: `rigctl report A B` compares any)" if more else ""
    return text + hidden + left_out
