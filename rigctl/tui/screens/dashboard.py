"""The dashboard: host line, one card per GPU, the interconnect panel."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer

from rigctl.gpu.model import RigInfo, RigSnapshot
from rigctl.engine.poller import EngineState
from rigctl.tui.widgets.engine_panel import EnginePanel
from rigctl.tui.widgets.gpu_card import GpuCard
from rigctl.serve.status import ServingStatus
from rigctl.tui.widgets.host_bar import HostBar
from rigctl.tui.widgets.serving_bar import ServingBar
from rigctl.tui.widgets.topology_panel import TopologyPanel

NARROW = 100  # below this many columns panels stack and the matrix collapses


class DashboardScreen(Screen[None]):
    def __init__(self, info: RigInfo) -> None:
        super().__init__(id="dashboard")
        self.info = info
        self.last_snapshot: RigSnapshot | None = None

    def compose(self) -> ComposeResult:
        yield HostBar("", id="host-bar")
        yield ServingBar("checking the server...", id="serving-bar")
        with VerticalScroll(id="body"):
            with Horizontal(id="gpu-row"):
                for gpu in self.info.gpus:
                    yield GpuCard(gpu)
            yield EnginePanel()
            with Horizontal(id="lower"):
                yield TopologyPanel()
        yield Footer()

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "-narrow")
        if self.last_snapshot is not None:
            self.show(self.last_snapshot)

    @property
    def compact(self) -> bool:
        return self.size.width < NARROW

    def show(self, snapshot: RigSnapshot) -> None:
        self.last_snapshot = snapshot
        self.query_one(HostBar).show(snapshot)
        for card in self.query(GpuCard):
            sample = snapshot.sample_for(card.gpu.index)
            if sample is not None:
                card.show(sample)
        self.query_one(TopologyPanel).show(snapshot, compact=self.compact)

    def show_engine(self, state: EngineState, serving: ServingStatus) -> None:
        self.query_one(ServingBar).show(serving)
        self.query_one(EnginePanel).show(state, serving)

    def mark_stale(self, stale: bool) -> None:
        self.query_one(HostBar).set_class(stale, "-stale")
        for card in self.query(GpuCard):
            card.set_class(stale, "-stale")
