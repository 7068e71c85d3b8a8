"""The rigs screen (w): every rig the owner's Prometheus knows (each running `rigctl exporter`)
and every rig `[rigs.NAME]` can drive, one row each: what serves, its pool and usage, hit rate,
tok/s, power, alerts. `s` on a rig with `[rigs.NAME] ssh` lists its profiles (asked of its own
rigctl over SSH) and switches it, its progress shown here line by line."""

from __future__ import annotations

import subprocess

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Log, OptionList, Static
from textual.widgets.option_list import Option

from rigctl import fmt
from rigctl.config import load_settings, remote_rig
from rigctl.errors import RigctlError
from rigctl.exporter.rigs import RigRow, RigsView, rigs_view
from rigctl.remote.commands import SWITCH_ENDINGS, RemoteProfile, remote_profiles, remote_switch
from rigctl.tui.screens.confirm import ConfirmScreen
from rigctl.tui.widgets.columns import clear_with_columns
from rigctl.tui.worker_errors import SaysWorkerErrors

COLUMNS = ("rig", "state", "profile", "KV pool", "usage", "hit", "tok/s", "power", "alerts", "last switch", "ssh")
# what goes first when the screen is narrow: the figures a rig is judged by stay, whole
KEPT_FIRST = ("rig", "state", "profile", "KV pool", "hit", "alerts", "tok/s", "last switch", "usage", "power", "ssh")
REFRESH_S = 15.0  # Prometheus scrapes every 15 s by default: faster shows nothing new


def fitting_columns(rows: list[dict[str, str]], width: int) -> tuple[str, ...]:
    """The columns whose cells all fit `width` whole, taken in KEPT_FIRST's order, shown in COLUMNS'."""
    kept: list[str] = []
    used = 0
    for column in KEPT_FIRST:
        need = max([len(column), *(len(r[column]) for r in rows)]) + 2  # a DataTable cell's padding
        if used + need > width and kept:
            continue
        kept.append(column)
        used += need
    return tuple(c for c in COLUMNS if c in kept)


def rig_cells(row: RigRow) -> dict[str, str]:
    if not row.in_prometheus:
        state = "not in Prometheus"
    else:
        state = ("serving" if row.up else "DOWN") + (f" ({row.state})" if row.state and row.state != "serving" else "")
    return {
        "rig": row.rig,
        "state": state,
        "profile": row.profile or "-",
        "KV pool": fmt.count(row.kv_pool_tokens),
        "usage": fmt.frac_pct(row.kv_usage),
        "hit": fmt.frac_pct(row.hit_rate),
        "tok/s": fmt.number(row.tok_per_s),
        "power": fmt.watts(row.power_w),
        "alerts": ", ".join(row.alerts) or "-",
        "last switch": row.last_switch or "-",
        "ssh": row.ssh or "-",
    }


class RigsScreen(SaysWorkerErrors, Screen[None]):
    BINDINGS = [
        Binding("escape", "app.show_dashboard", "Back", show=False, tooltip="back to the dashboard"),
        Binding("s", "switch_rig", "Switch it", tooltip="the highlighted rig's profiles, then a switch there over SSH"),
        Binding("ctrl+r", "reload", "Reload", tooltip="ask Prometheus again"),
    ]

    view: RigsView | None = None
    columns: tuple[str, ...] = ()

    def compose(self) -> ComposeResult:
        yield Static("reading the rigs...", id="rigs-title", markup=False)
        yield DataTable(id="rigs-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="rigs-note", markup=False)
        yield Footer()

    refresh_timer: Timer | None = None

    def on_screen_resume(self) -> None:
        self.action_reload()
        if self.refresh_timer is None:
            self.refresh_timer = self.set_interval(REFRESH_S, self.action_reload, name="rigs-refresh")
        else:
            self.refresh_timer.resume()

    def on_screen_suspend(self) -> None:
        if self.refresh_timer is not None:
            self.refresh_timer.pause()  # nothing asks Prometheus while another screen is up

    def action_reload(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="rigs", exit_on_error=False, description="Reading the rigs from Prometheus")
    def _load(self) -> None:
        view = rigs_view(load_settings())
        self.app.call_from_thread(self.show, view)

    def on_resize(self) -> None:
        if self.view is not None:
            self.show(self.view)

    def show(self, view: RigsView) -> None:
        self.view = view
        table = self.query_one("#rigs-table", DataTable)
        cursor = table.cursor_row
        cells = [rig_cells(row) for row in view.rows]
        wanted = fitting_columns(cells, table.scrollable_content_region.width or self.size.width)
        self.columns = clear_with_columns(table, wanted, self.columns)
        for row, shown in zip(view.rows, cells, strict=True):
            table.add_row(*(shown[c] for c in wanted), key=row.rig)
        if view.rows:
            table.move_cursor(row=min(cursor, len(view.rows) - 1))
        self.query_one("#rigs-title", Static).update(
            f"{len(view.rows)} rig(s); s on one with ssh switches it" if view.rows else "no rig known"
        )
        self.query_one("#rigs-note", Static).update(
            view.problem
            or ("" if view.rows else "run `rigctl exporter` on each rig for Prometheus, or name one in [rigs.NAME] ssh = ...")
        )

    def _highlighted(self) -> RigRow | None:
        table = self.query_one("#rigs-table", DataTable)
        if self.view is None or not self.view.rows or table.cursor_row < 0:
            return None
        return self.view.rows[min(table.cursor_row, len(self.view.rows) - 1)]

    def action_switch_rig(self) -> None:
        row = self._highlighted()
        if row is None:
            return
        if row.ssh is None:
            add = f'[rigs.{row.rig}] ssh = "user@host"'
            self.notify(f"{row.rig} has no {add} in config.toml: add one to drive it", severity="warning")
            return
        self.notify(f"asking {row.rig} for its profiles...", timeout=3)
        self._pick_profile(row.rig)

    @work(thread=True, exclusive=True, group="rig-profiles", exit_on_error=False, description="A rig's profiles over SSH")
    def _pick_profile(self, name: str) -> None:
        try:
            profiles = remote_profiles(remote_rig(load_settings(), name))
        except RigctlError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error", timeout=15)
            return
        self.app.call_from_thread(self.app.push_screen, RigProfilesScreen(name, profiles), lambda p: self._confirm(name, p))

    def _confirm(self, rig: str, profile: str | None) -> None:
        if profile is None:
            return

        def answered(answer: str | None) -> None:
            if answer:
                self.app.push_screen(RemoteSwitchScreen(rig, profile), lambda _: self.action_reload())

        detail = f"rigctl switch {profile}, run by {rig}'s rigctl over SSH; it drains, verifies and rolls back there."
        self.app.push_screen(ConfirmScreen(f"Switch {rig} to {profile}? Its running server stops first.", detail), answered)


class RigProfilesScreen(ModalScreen[str | None]):
    """A rig's profiles, as its rigctl lists them: Enter picks one, Escape picks none."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", tooltip="switch nothing")]

    def __init__(self, rig: str, profiles: list[RemoteProfile]) -> None:
        super().__init__(id="rig-profiles")
        self.rig = rig
        self.profiles = profiles

    def compose(self) -> ComposeResult:
        options = [
            Option(
                f"{'* ' if p.active else '  '}{p.name}" + (f"  ERROR: {p.error}" if p.error else f"  {p.description}"),
                id=p.name,
                disabled=bool(p.error) or p.active,
            )
            for p in self.profiles
        ]
        with Vertical(id="confirm-box"):
            yield Static(f"{self.rig}: switch to which profile? (* serves now)", id="confirm-question", markup=False)
            yield OptionList(*options, id="rig-profile-list")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class RemoteSwitchScreen(SaysWorkerErrors, ModalScreen[None]):
    """A switch on another rig: its lines as the rig prints them, then what its exit code means.
    Escape closes this view only; the switch there goes on to its end."""

    BINDINGS = [Binding("escape", "close", "Close", tooltip="close this view (the switch there goes on)")]

    def __init__(self, rig: str, profile: str) -> None:
        super().__init__(id="remote-switch")
        self.rig = rig
        self.profile = profile
        self.ssh: subprocess.Popen[bytes] | None = None
        self.code: int | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(f"{self.rig}: switching to {self.profile}...", id="remote-switch-title", markup=False)
            yield Log(id="remote-switch-log", max_lines=500)

    def on_mount(self) -> None:
        self._run()

    @work(thread=True, group="remote-switch", exit_on_error=False, description="A switch on another rig")
    def _run(self) -> None:
        try:
            code = remote_switch(
                remote_rig(load_settings(), self.rig),
                self.profile,
                lambda line: self.app.call_from_thread(self.add_line, line),
                started=self._started,
            )
        except RigctlError as exc:
            self.app.call_from_thread(self.finish, None, str(exc))
            return
        self.app.call_from_thread(self.finish, code, SWITCH_ENDINGS.get(code, f"exit {code}"))

    def _started(self, ssh: subprocess.Popen[bytes]) -> None:
        self.ssh = ssh

    def add_line(self, line: str) -> None:
        self.query_one("#remote-switch-log", Log).write_line(line)

    def finish(self, code: int | None, text: str) -> None:
        self.code = code
        self.query_one("#remote-switch-title", Static).update(f"{self.rig}: {self.profile}: {text} (Escape closes)")
        said = f"{self.rig}: {self.profile}: {text}"
        self.notify(said, title="rig switch", severity="information" if code == 0 else "error", timeout=15)

    def action_close(self) -> None:
        if self._stop_watching():
            self.notify(f"the switch goes on on {self.rig}; w shows how it ended", timeout=8)
        self.dismiss(None)

    def on_unmount(self) -> None:
        self._stop_watching()  # quitting the TUI mid-switch: its worker's ssh must not hold the exit

    def _stop_watching(self) -> bool:
        """End the ssh that streams the switch (only the watching: the rig's rigctl finishes it)."""
        if self.code is None and self.ssh is not None and self.ssh.poll() is None:
            self.ssh.terminate()
            return True
        return False
