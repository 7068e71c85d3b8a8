"""One line: what the rig serves, verified (alive and answering), or why not."""

from __future__ import annotations

from textual.widgets import Static

from rigctl.serve.status import ServingStatus


class ServingBar(Static):
    def show(self, status: ServingStatus) -> None:
        self.set_class(status.active_profile is not None, "-serving")
        self.set_class(status.active_profile is None and bool(status.record), "-warn")
        text = status.summary
        if str(self.content) != text:
            self.update(text)
