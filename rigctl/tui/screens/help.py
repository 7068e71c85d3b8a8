"""The help screen (?): every key of the app and of each screen, read from the live bindings
so it cannot drift from them, and what `n/a` and stale values mean."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

NOT_AVAILABLE = (
    (
        "n/a on a GPU figure",
        (
            "the driver does not report it for this card: GeForce boards refuse some NVML "
            "queries (NotSupported), e.g. reserved VRAM on older drivers or fan speed on "
            "some boards. rigctl shows n/a rather than a guess."
        ),
    ),
    (
        "n/a on a rate",
        (
            "a rate needs two scrapes of /metrics: it appears one refresh after the engine "
            "answers, and after vLLM restarts (counters reset, said as RESTARTED)."
        ),
    ),
    (
        "n/a on an engine figure",
        (
            "this vLLM does not publish that metric (older and newer versions name "
            "them differently; rigctl reads both), or nothing has happened yet."
        ),
    ),
    ("idle", "no request finished in the interval, so there is no latency to show."),
    ("J/tok n/a (idle)", "no tokens were generated in the interval: joules per token is undefined."),
    (
        "dimmed panel, DOWN since",
        (
            "the endpoint or NVML stopped answering: the last values stay, dimmed, "
            "until it answers again; nothing is made up meanwhile."
        ),
    ),
    ("backend unavailable", "no NVIDIA driver here: start with --sim NAME (rigctl sims lists them)."),
)


@dataclass(frozen=True)
class HelpRow:
    scope: str  # "everywhere" or a screen's name
    keys: str  # as Textual spells them, e.g. "R", "ctrl+r"
    action: str  # the action the key runs, e.g. "app.restart"
    description: str


def _rows(scope: str, bindings: list[BindingType], prefix: str) -> list[HelpRow]:
    rows = []
    for binding in bindings:
        if not isinstance(binding, Binding) or not binding.description:
            continue
        action = binding.action if "." in binding.action else f"{prefix}{binding.action}"
        rows.append(HelpRow(scope, binding.key, action, binding.tooltip or binding.description))
    return rows


def help_rows(app: App[Any], screens: Mapping[str, type]) -> list[HelpRow]:
    """App keys first, then each screen's own, in the order they are declared."""
    rows = _rows("everywhere", list(app.BINDINGS), "app.")
    for name, screen in screens.items():
        # Only what the screen declares itself; Textual's inherited focus keys are not ours to list.
        rows.extend(_rows(name, list(screen.__dict__.get("BINDINGS", [])), "screen."))
    return rows


def key_label(keys: str) -> str:
    return " / ".join({"question_mark": "?", "escape": "esc", "enter": "enter"}.get(k, k) for k in keys.split(","))


def help_table(rows: list[HelpRow]) -> Table:
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("key", no_wrap=True, style="bold")
    table.add_column("where", style="dim", no_wrap=True)
    table.add_column("does")
    for row in rows:
        table.add_row(key_label(row.keys), row.scope, row.description)
    return table


def na_text() -> Text:
    out = Text()
    for label, meaning in NOT_AVAILABLE:
        out.append(label, style="bold")
        out.append(f": {meaning}\n")
    out.rstrip()
    return out


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close", show=False)]

    def __init__(self, rows: list[HelpRow]) -> None:
        super().__init__(id="help")
        self.rows = rows

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(
                "rigctl keys (also ctrl+p: command palette; the mouse clicks rows and buttons)",
                classes="help-heading",
                markup=False,
            )
            yield Static(help_table(self.rows), id="help-keys", markup=False)
            yield Static("What n/a, idle and stale mean", classes="help-heading", markup=False)
            yield Static(na_text(), id="help-na", markup=False)
            yield Static("esc, ? or q closes this", classes="help-foot", markup=False)

    def on_mount(self) -> None:
        self.query_one("#help-box").focus()
