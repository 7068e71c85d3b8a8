"""One line: what the rig serves, verified (alive and answering), or why not; and, while any
fires, the alerts (the lasting mark a notification that faded leaves behind)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rigctl.tui.widgets.text_line import TextLine

if TYPE_CHECKING:
    from rigctl.bench.live import LiveBench
    from rigctl.state.serving import ServingStatus


def bench_text(live: LiveBench | None) -> str:
    if live is None:
        return ""
    if live.cut_short:
        return f"bench {live.plan} cut short: `rigctl bench --restore` puts {live.control or 'its control'} back"
    p = live.progress
    return f"bench {live.plan} running: arm {p.number} of {p.arms} ({p.role} {p.profile}, {p.phase})"


class ServingBar(TextLine):
    status: ServingStatus | None = None
    alerts: tuple[str, ...] = ()
    bench: str = ""

    def show_bench(self, live: LiveBench | None) -> None:
        self.bench = bench_text(live)
        self._paint()

    def show(self, status: ServingStatus) -> None:
        self.status = status
        self._paint()

    def show_alerts(self, titles: Sequence[str]) -> None:
        self.alerts = tuple(titles)
        self._paint()

    def _paint(self) -> None:
        status = self.status
        serving = status is not None and status.active_profile is not None
        door_down = status is not None and status.door_down is not None  # the apps are refused: as loud as an alert
        self.set_class(serving and not self.alerts and not door_down, "-serving")
        self.set_class(status is not None and status.active_profile is None and bool(status.record), "-warn")
        self.set_class(bool(self.alerts) or door_down, "-alert")
        text = status.summary if status is not None else "checking the server..."
        if self.bench:
            text = f"{self.bench} | {text}"
        if self.alerts:
            text = f"▲ {len(self.alerts)} alert{'s' if len(self.alerts) > 1 else ''}: {', '.join(self.alerts)} | {text}"
        self.set_text(text)
