"""The bench screen (B): the bench running on this rig now (from any terminal: arm, requests
done, live tok/s, ETA), the kept runs with their verdicts, and the report of the one picked.

Runs start from `rigctl bench PLAN`; while one runs it holds the rig lock, so a switch from
here is refused with its name."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from rigctl import fmt
from rigctl.bench.live import LiveBench, progress_line, read_live
from rigctl.bench.rawdir import RawDir, bench_dir
from rigctl.errors import RigctlError
from rigctl.tui.widgets.columns import clear_with_columns
from rigctl.tui.worker_errors import SaysWorkerErrors


def live_text(live: LiveBench | None) -> str:
    if live is None:
        return "no bench running   (start one: rigctl bench PLAN; rigctl bench list shows kept runs)"
    head = f"bench {live.plan} (pid {live.pid}): {progress_line(live.progress)}"
    return head + f"   [{fmt.seconds(live.elapsed())} in]"


# What decides first (the verdict, the change), then what was compared; the run's directory name
# is the row's key and the report's title, not a column: at 80 columns nothing is cut.
SHOWN = ("verdict", "change", "control -> candidate", "when", "gate")
NARROW = 100  # below: the gate's metric is in the run's report only


def shown(row: list[str], wide: bool = True) -> list[str]:
    """A row of `rigctl bench list` (run, when, control -> candidate, gate, change, verdict) as the screen shows it."""
    _run, when, compared, gate, change, verdict = row
    cells = [verdict, change, compared, when[5:]]  # the year is in the run's name
    return [*cells, gate] if wide else cells


class BenchScreen(SaysWorkerErrors, Screen[None]):
    BINDINGS = [
        Binding("escape", "app.show_dashboard", "Back", show=False, tooltip="back to the dashboard"),
        Binding("ctrl+r", "reload", "Reload", tooltip="read the kept runs again"),
    ]

    rows: list[list[str]] | None = None
    columns: tuple[str, ...] = ()

    def on_resize(self) -> None:
        if self.rows is not None and (self.size.width >= NARROW) != (len(self.columns) == len(SHOWN)):
            self._show(self.rows, read_live())

    def compose(self) -> ComposeResult:
        yield Static(Text(live_text(None)), id="bench-live", markup=False)
        yield DataTable(id="bench-runs", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="bench-report-box"):
            yield Static("pick a run (enter) to see its report", id="bench-report", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(1.0, self._poll_live)

    def on_screen_resume(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        self._load()

    def _poll_live(self) -> None:
        if self.is_current:
            self._read_live()

    @work(thread=True, exclusive=True, group="bench-live", exit_on_error=False, description="Reading the live bench")
    def _read_live(self) -> None:
        live = read_live()
        self.app.call_from_thread(self.query_one("#bench-live", Static).update, Text(live_text(live)))

    @work(thread=True, exclusive=True, group="bench", exit_on_error=False, description="Reading kept bench runs")
    def _load(self) -> None:
        from rigctl.bench.report import list_rows  # the bench's reading of kept runs: not at the TUI's start

        rows, live = list_rows()[1:], read_live()
        self.app.call_from_thread(self._show, rows, live)

    def _show(self, rows: list[list[str]], live: LiveBench | None) -> None:
        self.query_one("#bench-live", Static).update(Text(live_text(live)))
        self.rows = rows
        table = self.query_one(DataTable)
        wide = self.size.width >= NARROW
        columns = SHOWN if wide else SHOWN[:-1]
        self.columns = clear_with_columns(table, columns, self.columns)
        for row in reversed(rows):
            table.add_row(*shown(row, wide), key=row[0])
        if not rows:
            self.query_one("#bench-report", Static).update(Text(f"no kept runs in {bench_dir()} yet"))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self._report(event.row_key.value)

    @work(thread=True, exclusive=True, group="bench-report", exit_on_error=False, description="Reading a kept run")
    def _report(self, name: str) -> None:
        from rigctl.bench.arm_bars import arm_bars
        from rigctl.bench.report import reload, render

        try:
            data = reload(RawDir(bench_dir() / name))
            text = "\n".join(arm_bars(data, max(40, self.size.width - 4))) + "\n\n" + render(data)
        except (RigctlError, OSError, ValueError, KeyError) as exc:
            text = f"{name}: cannot be shown: {exc}"
        self.app.call_from_thread(self.query_one("#bench-report", Static).update, Text(text))
