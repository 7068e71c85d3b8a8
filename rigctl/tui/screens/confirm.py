"""A question before anything that restarts the server: yes or no, and for a switch with requests
running, whether to wait for them (the default) or cut them now."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

YES, CUT = "yes", "cut"  # the answers; None is no


class ConfirmScreen(ModalScreen[str | None]):
    BINDINGS = [
        Binding("y", "answer('yes')", "Yes", tooltip="yes: go ahead (running requests finish first)"),
        Binding("c", "answer('cut')", "Cut now", tooltip="yes, and cut the running requests now"),
        Binding("n,escape", "answer(None)", "No", tooltip="no: nothing is touched"),
    ]

    def __init__(self, question: str, detail: str = "", cut: bool = False) -> None:
        """`cut`: requests are running; offer to cut them instead of waiting."""
        super().__init__(id="confirm")
        self.question = question
        self.detail = detail
        self.cut = cut

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.question, id="confirm-question", markup=False)
            if self.detail:
                with VerticalScroll(id="confirm-scroll"):
                    yield Static(self.detail, id="confirm-detail", markup=False)
            with Horizontal(id="confirm-buttons"):
                yield Button("Yes, let them finish (y)" if self.cut else "Yes (y)", id=YES, variant="warning")
                if self.cut:
                    yield Button("Cut now (c)", id=CUT, variant="error")
                yield Button("No (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id if event.button.id in (YES, CUT) else None)

    def action_answer(self, answer: str | None) -> None:
        if answer == CUT and not self.cut:
            return  # nothing runs to be cut: c means nothing here
        self.dismiss(answer)
