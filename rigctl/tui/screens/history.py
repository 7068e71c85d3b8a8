"""The history screen (h): every successful boot rigctl recorded, newest first, with what the
engine reported (KV pool, load time), so profiles are compared on measured figures."""

from __future__ import annotations

import time

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from rigctl import fmt
from rigctl.serve.boots import BootRecord, read_all

COLUMNS = ("when", "profile", "hash", "KV tokens", "conc", "max len", "GiB", "load s", "boot s")


def history_cells(record: BootRecord) -> tuple[str, ...]:
    when = time.strftime("%m-%d %H:%M", time.localtime(record.when))
    return (when, record.profile, record.profile_hash[:8], fmt.count(record.kv_tokens),
            fmt.number(record.max_concurrency, 2, "x"), fmt.count(record.max_model_len),
            fmt.number(record.model_load_gib, 1), fmt.number(record.model_load_seconds, 1),
            fmt.number(record.boot_seconds, 1))


class HistoryScreen(Screen[None]):
    BINDINGS = [Binding("escape", "app.show_dashboard", "Back", show=False, tooltip="back to the dashboard"),
                Binding("ctrl+r", "reload", "Reload", tooltip="read history.jsonl again")]

    def compose(self) -> ComposeResult:
        yield Static("boots recorded by rigctl (history.jsonl), newest first", id="history-title")
        table: DataTable[str] = DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
        for column in COLUMNS:
            table.add_column(column, key=column)
        yield table
        yield Footer()

    def on_screen_resume(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="history", exit_on_error=False, description="Reading boot history")
    def _load(self) -> None:
        records = read_all()
        self.app.call_from_thread(self._show, records)

    def _show(self, records: list[BootRecord]) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for record in reversed(records):
            table.add_row(*history_cells(record))
        title = self.query_one("#history-title", Static)
        title.update(f"{len(records)} boots recorded by rigctl, newest first" if records else
                     "no boots recorded yet: a switch that reaches ready adds a row here")
