"""The processes screen (P): every process holding memory on each GPU, as nvitop lists them: the
GPU, pid, user, what vLLM process it is (API server, engine core, TP worker), its memory and its
command line. From the rig sample the dashboard already took: no NVML call of its own."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from rigctl import fmt
from rigctl.gpu.model import RigSnapshot
from rigctl.redact import redact_text

COLUMNS = ("GPU", "pid", "user", "vLLM", "memory", "command")


def process_rows(snapshot: RigSnapshot) -> list[tuple[str, ...]]:
    """A row a process a GPU, the largest holder first on each GPU; a lost GPU or a driver that
    does not list processes says so in a row of its own."""
    rows: list[tuple[str, ...]] = []
    for sample in snapshot.samples:
        gpu = f"GPU{sample.index}"
        if sample.lost:
            rows.append((gpu, "", "", "", "", "lost: it does not answer NVML"))
            continue
        if sample.processes is None:
            rows.append((gpu, "", "", "", "", "n/a: the driver does not list its processes"))
            continue
        for proc in sorted(sample.processes, key=lambda p: -(p.used_memory or 0)):
            command = redact_text(proc.cmdline or proc.name or "?")  # an argv may carry an API key
            rows.append((gpu, str(proc.pid), proc.user or "?", proc.vllm_role or "", fmt.gib(proc.used_memory, 1), command))
        if not sample.processes:
            rows.append((gpu, "", "", "", "", "no process holds memory here"))
    return rows


class ProcessesScreen(Screen[None]):
    BINDINGS = [Binding("escape", "app.show_dashboard", "Back", show=False, tooltip="back to the dashboard")]

    def compose(self) -> ComposeResult:
        yield Static("processes on each GPU, from the last sample (every second)", id="processes-title", markup=False)
        table: DataTable[str] = DataTable(id="processes-table", cursor_type="row", zebra_stripes=True)
        for column in COLUMNS:
            table.add_column(column, key=column)
        yield table
        yield Static("", id="processes-command", markup=False)  # the highlighted row's whole command line
        yield Footer()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        rows = self._shown or []
        if 0 <= event.cursor_row < len(rows):
            self.query_one("#processes-command", Static).update(Text(rows[event.cursor_row][-1]))

    def on_resize(self) -> None:
        rows, self._shown = self._shown, None
        if rows is not None and self._last is not None:
            self.show(self._last)

    _last: RigSnapshot | None = None
    _shown: list[tuple[str, ...]] | None = None

    def show(self, snapshot: RigSnapshot) -> None:
        self._last = snapshot
        if not self.is_mounted:
            return
        table = self.query_one("#processes-table", DataTable)
        rows = process_rows(snapshot)
        if rows == self._shown:
            return  # the same processes: no repaint, the cursor stays put
        self._shown = rows
        cursor = table.cursor_row
        table.clear()
        # the command gets the width the other columns leave (its whole line is under the table)
        others = [max(len(COLUMNS[i]), *(len(r[i]) for r in rows)) + 2 for i in range(len(COLUMNS) - 1)]
        room = max(12, table.scrollable_content_region.width - sum(others) - 2)
        for row in rows:
            command = row[-1] if len(row[-1]) <= room else row[-1][: room - 1] + "…"
            table.add_row(*row[:-1], command)
        if rows:
            table.move_cursor(row=min(cursor, len(rows) - 1))
