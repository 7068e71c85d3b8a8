"""The dashboard: host line, one card per GPU, the engine, the interconnect, and on a tall
terminal the server log. It adapts: narrow (<100 columns) stacks and drops the matrix, short
(<30 rows) keeps the interconnect to its pair line and warnings, tall (>=36 rows) adds the log."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer

from rigctl.state.logfilter import ANSWERED_REQUESTS
from rigctl.tui.widgets.engine_panel import EnginePanel
from rigctl.tui.widgets.gpu_card import GpuCard
from rigctl.tui.widgets.host_bar import HostBar
from rigctl.tui.widgets.lines_widget import LinesWidget
from rigctl.tui.widgets.log_tail import LogTail
from rigctl.tui.widgets.serving_bar import ServingBar
from rigctl.tui.widgets.topology_panel import TopologyPanel

if TYPE_CHECKING:
    from rigctl.bench.live import LiveBench
    from rigctl.config import Settings
    from rigctl.engine.poller import EngineState
    from rigctl.gpu.model import RigInfo, RigSnapshot
    from rigctl.state.logtail import TailReader
    from rigctl.state.serving import ServingStatus

NARROW = 100  # columns: below, panels stack and the matrix collapses
SHORT = 30  # rows: below, the interconnect shows its essentials only
TALL = 36  # rows: from here the log tail joins the dashboard


class DashboardScreen(Screen[None]):
    def __init__(self, info: RigInfo, settings: Settings) -> None:
        super().__init__(id="dashboard")
        self.info = info
        self.settings = settings
        self.last_snapshot: RigSnapshot | None = None
        self._cards: list[GpuCard] = []
        self._tail: LogTail | None = None  # set once composed (on_mount)
        self._alerts: list[str] = []
        self._bench: LiveBench | None = None
        self._last_engine: tuple[EngineState, ServingStatus] | None = None

    def compose(self) -> ComposeResult:
        yield HostBar("", id="host-bar")
        yield ServingBar("checking the server...", id="serving-bar")
        with VerticalScroll(id="body"):
            with Horizontal(id="gpu-row"):
                for gpu in self.info.gpus:
                    yield GpuCard(gpu)
            yield EnginePanel()
            yield TopologyPanel()
        # vLLM's own words: the access lines of answered requests would scroll them away under load
        yield LogTail(self.settings, id="dashboard-log", read_every=None, tail_hides=ANSWERED_REQUESTS)
        yield Footer()

    @property
    def narrow(self) -> bool:
        return self.size.width < NARROW

    @property
    def short(self) -> bool:
        return self.size.height < SHORT

    @property
    def tall(self) -> bool:
        return self.size.height >= TALL

    def on_mount(self) -> None:
        self._tail = self.query_one(LogTail)
        # a tick can land before the screen is composed (the poll starts with the app): shown now
        if self.last_snapshot is not None:
            self.show(self.last_snapshot)
        if self._last_engine is not None:
            self.show_engine(*self._last_engine)
        self.show_alerts(self._alerts)
        self.show_bench(self._bench)

    def on_resize(self) -> None:
        self.set_class(self.narrow, "-narrow")
        self.set_class(self.tall, "-tall")
        self._follow_log()
        if self.last_snapshot is not None:
            self.show(self.last_snapshot)

    def on_screen_resume(self) -> None:
        for widget in self.query(LinesWidget):  # the ticks that came while another screen was shown
            widget.catch_up()
        self._follow_log()

    def on_screen_suspend(self) -> None:
        self.query_one(LogTail).follow(False)

    def _follow_log(self) -> None:
        """The tail reads the log only while it is on screen: nothing is spent on a hidden panel."""
        self.query_one(LogTail).follow(self.tall and self.is_current)  # read at the next tick

    @property
    def tail_reader(self) -> TailReader | None:
        """The reader the poll loop reads the log with while the tail is shown (read from that thread)."""
        return self._tail.reader if self._tail is not None else None

    def show_log(self, reader: TailReader, title: str | None, lines: list[str]) -> None:
        if self._tail is not None:
            self._tail.show(reader, title, lines)

    def show(self, snapshot: RigSnapshot) -> None:
        fresh = snapshot is not self.last_snapshot  # a resize shows the same one again: no new history
        self.last_snapshot = snapshot
        if self._tail is None:  # not composed yet: on_mount shows it
            return
        self.query_one(HostBar).show(snapshot)
        if not self._cards:
            self._cards = list(self.query(GpuCard))  # fixed for the app's life: query once
        for card in self._cards:
            sample = snapshot.sample_for(card.gpu.index)
            if sample is not None:
                card.show(sample, fresh)
        self.query_one(TopologyPanel).show(snapshot, matrix=not self.narrow and not self.short, essentials_only=self.short)

    def show_engine(self, state: EngineState, serving: ServingStatus) -> None:
        self._last_engine = (state, serving)
        if self._tail is None:  # not composed yet: on_mount shows it
            return
        self.query_one(ServingBar).show(serving)
        self.query_one(EnginePanel).show(state, serving)

    def show_bench(self, live: LiveBench | None) -> None:
        """A bench holding the rig (or cut short) on the serving bar: the owner sees why a switch is
        refused and what the engine's traffic is."""
        self._bench = live
        if self._tail is not None:
            self.query_one(ServingBar).show_bench(live)

    def show_alerts(self, titles: list[str]) -> None:
        """The alerts firing now, on the serving bar until they clear."""
        self._alerts = titles
        if self._tail is not None:
            self.query_one(ServingBar).show_alerts(titles)

    def mark_stale(self, stale: bool) -> None:
        if self._tail is None:
            return
        self.query_one(HostBar).set_class(stale, "-stale")
        for card in self.query(GpuCard):
            card.set_class(stale, "-stale")
