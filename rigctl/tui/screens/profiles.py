"""The Profiles screen: every profile with its first-class knobs; the selected one resolved,
its argv/env difference against the active profile, and its errors and lints inline."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from rigctl.fit.calibrate import last_measured
from rigctl.fit.check import CheckedProfile, check_profile
from rigctl.gpu.model import RigInfo
from rigctl.profiles.schema import Diagnostic, Profile, ProfileError
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.summary import Change, knobs, launch_diff
from rigctl.profiles.text import show_text
from rigctl.profiles.vllm_args import LaunchSpec
from rigctl.profiles.vllm_version import OptionTables
from rigctl.state.boots import BootRecord, read_history
from rigctl.state.statefiles import active_profile_name
from rigctl.tui.messages import SwitchRequested
from rigctl.tui.widgets.columns import clear_with_columns
from rigctl.tui.worker_errors import SaysWorkerErrors
from rigctl.vllm.options import OptionTable

COLUMNS = ("name", "layout", "quant", "ctx", "seqs", "async", "mtp", "kv")
# below 100 columns the KV dtype and async scheduling are in the detail pane only: a long profile
# name and every figure of the rest fit 80 columns whole
NARROW_COLUMNS = tuple(c for c in COLUMNS if c not in ("async", "kv"))
NARROW = 100
ACTIVE = "● "


@dataclass(frozen=True)
class ProfileEntry:
    name: str
    profile: Profile | None
    diagnostics: tuple[Diagnostic, ...]
    spec: LaunchSpec | None
    cells: dict[str, str]
    table: OptionTable | None = None  # what it was checked against
    pool_line: str = ""  # the KV pool predicted on this rig beside the last one the engine reported


def pool_line(checked: CheckedProfile, rig: RigInfo | None, records: list[BootRecord]) -> str:
    """`KV pool: predicted 334,051 tokens (10.19x at 32,768), TP2/DP1 · measured 350,518 (2026-12-01 10:02)`."""
    name, layout = checked.profile.name, checked.prediction
    if layout is None:
        predicted = "predicted n/a"
    elif isinstance(layout, str):
        predicted = f"predicted n/a ({layout})"
    elif layout.pool is None:
        predicted = f"predicted: does not fit ({layout.why_not})"
    else:
        predicted = (
            f"predicted {layout.pool.tokens:,} tokens ({layout.pool.max_concurrency:.2f}x at "
            f"{layout.pool.max_model_len:,}), {layout.name}" + ("" if layout.fits else f"; {layout.why_not}")
        )
    measured = last_measured(records, name, rig.backend if rig else None)
    if measured is None or measured.pool_tokens is None:
        return f"KV pool: {predicted} · measured: no boot of it on this rig yet"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(measured.when))
    conc = f" ({measured.max_concurrency:.2f}x)" if measured.max_concurrency else ""
    return f"KV pool: {predicted} · measured {measured.pool_tokens:,} tokens{conc}, {when}"


def load_entries(rig: RigInfo | None, tables: OptionTables) -> tuple[list[ProfileEntry], str | None]:
    """Every profile validated and rendered: file reads (and a first `vllm --version`), done off
    the UI thread."""
    store = ProfileStore()
    entries = []
    records = read_history().records
    for name in store.names():
        try:
            profile = store.load(name)
        except ProfileError as exc:
            entries.append(ProfileEntry(name, None, tuple(exc.diagnostics), None, {}))
            continue
        table = tables.choose(profile).table
        checked = check_profile(profile, table, rig, tables.default_command)
        line = pool_line(checked, rig, records) if checked.launch is not None else ""
        entries.append(ProfileEntry(name, profile, checked.diagnostics, checked.launch, knobs(profile, table).cells(), table, line))
    return entries, active_profile_name()


def diff_text(changes: list[Change], active: str) -> str:
    if not changes:
        return f"same command line and environment as the active profile ({active})"
    lines = [f"against the active profile ({active}):"]
    for c in changes:
        lines.append(f"  {c}")
    return "\n".join(lines)


class ProfilesScreen(SaysWorkerErrors, Screen[None]):
    BINDINGS = [
        Binding(
            "s",
            "switch",
            "Switch",
            tooltip="switch to the selected profile (or enter/click on a row; asks first, rolls back on failure)",
        ),
        Binding("ctrl+r", "reload", "Reload", tooltip="read the profile files again"),
        Binding("escape", "app.show_dashboard", "Back", show=False, tooltip="back to the dashboard"),
    ]

    def __init__(self, rig: RigInfo | None, tables: OptionTables) -> None:
        super().__init__(id="profiles")
        self.rig = rig
        self.tables = tables
        self.entries: dict[str, ProfileEntry] = {}
        self.active: str | None = None
        self.columns: tuple[str, ...] = ()

    def compose(self) -> ComposeResult:
        yield DataTable(id="profile-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="profile-detail-scroll"):
            yield Static("loading profiles...", id="profile-detail", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="profiles", exit_on_error=False, description="Loading profiles")
    def _load(self) -> None:
        entries, active = load_entries(self.rig, self.tables)
        self.app.call_from_thread(self._show_entries, entries, active)

    def on_resize(self) -> None:
        if self.entries and self._columns_for_width() != self.columns:
            self._show_entries(list(self.entries.values()), self.active)

    def _columns_for_width(self) -> tuple[str, ...]:
        return NARROW_COLUMNS if self.size.width < NARROW else COLUMNS

    def _show_entries(self, entries: list[ProfileEntry], active: str | None) -> None:
        self.entries = {e.name: e for e in entries}
        self.active = active
        table = self.query_one(DataTable)
        selected = self.selected_name
        columns = self._columns_for_width()
        self.columns = clear_with_columns(table, columns, self.columns)
        for entry in entries:
            if entry.profile is None or entry.spec is None:
                cells = ["INVALID"] + [""] * (len(columns) - 2)
            else:
                cells = [entry.cells[c] for c in columns[1:]]
            label = f"{ACTIVE if entry.name == active else '  '}{entry.name}"
            table.add_row(label, *cells, key=entry.name)
        if selected in self.entries:
            table.move_cursor(row=list(self.entries).index(selected))
        self._show_detail(self.selected_name)

    def show_active(self, active: str | None) -> None:
        """What serves now, from the poll (verified, not the state file's word): the ● moves, and
        the detail's diff is against it; nothing is read again."""
        if active == self.active or not self.entries:
            return
        self.active = active
        table = self.query_one(DataTable)
        first = self.columns[0] if self.columns else None
        for entry in self.entries.values():
            if first is not None:
                table.update_cell(entry.name, first, f"{ACTIVE if entry.name == active else '  '}{entry.name}")
        self._show_detail(self.selected_name)

    @property
    def selected_name(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_switch()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(str(event.row_key.value) if event.row_key else None)

    def _show_detail(self, name: str | None) -> None:
        detail = self.query_one("#profile-detail", Static)
        entry = self.entries.get(name or "")
        if entry is None:
            detail.update("no profiles found")
            return
        if entry.profile is None:
            detail.update(Text("\n".join(str(d) for d in entry.diagnostics), style="red"))
            return
        assert entry.table is not None
        out = Text(show_text(entry.profile, entry.table, entry.spec, []))
        if entry.pool_line:
            out.append("\n\n" + entry.pool_line)
        active = self.entries.get(self.active or "")
        if entry.spec and active and active.spec and active.name != entry.name:
            out.append("\n\n" + diff_text(launch_diff(active.spec, entry.spec), active.name))
        for diagnostic in entry.diagnostics:
            out.append("\n" + str(diagnostic), style="red" if diagnostic.severity == "error" else "yellow")
        detail.update(out)

    def action_switch(self) -> None:
        name = self.selected_name
        entry = self.entries.get(name or "")
        if entry is None or entry.spec is None:
            self.notify(f"{name} is not valid: fix it first", severity="error")
            return
        active = self.entries.get(self.active or "")
        detail = ""
        if active and active.spec and active.name != entry.name:
            detail = diff_text(launch_diff(active.spec, entry.spec), active.name)
        self.post_message(SwitchRequested(entry.name, detail))  # bubbles to the app, which asks first
