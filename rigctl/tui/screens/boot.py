"""The live boot panel: phases ticking with their seconds, the log tail, then the outcome."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from rigctl.state.boots import BootEstimate
from rigctl.tui.widgets.server_log import ServerLog

STEPS_SHOWN = 8  # phases of a boot shown at once


class BootScreen(Screen[None]):
    BINDINGS = [Binding("escape,enter", "app.pop_screen", "Close", tooltip="close the boot panel (the switch goes on)")]

    def __init__(self, target: str, estimate: BootEstimate | None = None) -> None:
        """`estimate`: how long the target's last boots took (the history), for the ETA."""
        super().__init__(classes="boot-panel")
        self.target = target
        self.estimate = estimate
        self.began = time.monotonic()
        self.boot_began: float | None = None  # the boot's own clock starts at its first "starting": the drain is apart
        self.steps: list[tuple[str, str, str]] = []  # (kind, text, style)
        self.done = False

    def compose(self) -> ComposeResult:
        with Vertical(id="boot-body"):
            yield Static(self._title(), id="boot-title", markup=False)
            yield Static("", id="boot-steps", markup=False)
            yield Static("", id="boot-outcome", markup=False)
            yield ServerLog(id="boot-log", max_lines=500)
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def _clock(self) -> str:
        """The drain and the boot, each on its own clock: a boot estimate never counts the drain."""
        now = time.monotonic()
        if self.boot_began is None:
            return f"{now - self.began:.0f} s letting the running requests finish (the apps' new requests wait)"
        drained = self.boot_began - self.began
        elapsed = now - self.boot_began
        boot = (
            f"booting {self.estimate.describe(elapsed)}"
            if self.estimate is not None
            else f"booting {elapsed:.0f} s (no boot of it recorded yet: no estimate)"
        )
        return boot + (f", after {drained:.0f} s of drain" if drained >= 1 else "")

    def _title(self) -> str:
        return f"Switching to {self.target}... {self._clock()}"

    def _tick(self) -> None:
        if not self.done:
            self.query_one("#boot-title", Static).update(self._title())

    def add_event(self, kind: str, text: str, profile: str | None, seconds: float | None) -> None:
        if kind in ("line", "command"):
            self.query_one(ServerLog).write_line(f"$ {text}" if kind == "command" else text)
            return
        if kind == "step" and text.startswith("starting ") and self.boot_began is None:
            self.boot_began = time.monotonic()
        style = {"warning": "yellow", "failure": "bold red", "step": "bold"}.get(kind, "")
        at = f"{seconds:6.1f}s  " if seconds is not None else "         "
        self.steps.append((kind, f"{at}{text}", style))
        self.query_one("#boot-steps", Static).update(self.render_steps())

    def render_steps(self) -> Text:
        """Every step, warning and failure; the phases of the last two boots, the last STEPS_SHOWN
        of each: a rollback's boot under way, and above it the failed boot's phases up to where it
        failed (the log keeps all)."""
        by_boot: dict[int, list[int]] = {}  # a step's index -> the phases that followed it
        step = -1
        for i, (kind, _, _) in enumerate(self.steps):
            if kind == "step":
                step = i
            elif kind == "phase":
                by_boot.setdefault(step, []).append(i)
        keep = {i for boot in sorted(by_boot)[-2:] for i in by_boot[boot][-STEPS_SHOWN:]}
        shown = Text()
        for i, (kind, line, style) in enumerate(self.steps):
            if kind != "phase" or i in keep:
                shown.append(line + "\n", style=style)
        return shown

    def finish(self, message: str, ok: bool) -> None:
        self.done = True
        outcome = self.query_one("#boot-outcome", Static)
        outcome.update(Text(message + "   (enter to close)", style="bold green" if ok else "bold red"))
        self.query_one("#boot-title", Static).update(f"Switch to {self.target}: {'done' if ok else 'failed'}, {self._clock()}")
