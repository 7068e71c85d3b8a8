"""One line: what the rig serves, verified (alive and answering), or why not."""

from __future__ import annotations

from rigctl.serve.serving import ServingStatus
from rigctl.tui.widgets.text_line import TextLine


class ServingBar(TextLine):
    def show(self, status: ServingStatus) -> None:
        self.set_class(status.active_profile is not None, "-serving")
        self.set_class(status.active_profile is None and bool(status.record), "-warn")
        text = status.summary
        self.set_text(text)
