"""The dashboard at 80x24 and 160x48 on simulated rigs and on NVML over the fake driver."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from rigctl.gpu.model import GpuSample
from rigctl.gpu.nvml import NvmlBackend
from rigctl.gpu.sampler import RigSampler
from rigctl.sim.claims import write_claim
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import load_rig
from rigctl.tui.app import make_app
from rigctl.tui.widgets.gpu_card import GpuCard
from rigctl.tui.widgets.topology_panel import TopologyPanel
from rigctl.units import MIB
from tests.support import present
from tests.support.fake_nvml import FakeNvmlLib, installed
from tests.tui.helpers import Seen, poll

SIZES = [(80, 24), (160, 48)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_both_cards_visible_and_values_follow_the_rig(size: tuple[int, int], tmp_path: Path) -> None:
    backend = SimulatedBackend(load_rig("2x3090-nvlink"), claims_dir=tmp_path)
    app = make_app(RigSampler(backend), poll_interval=None)

    async def scenario() -> None:
        async with app.run_test(size=size) as pilot:
            await poll(app, pilot)
            cards = list(app.screen.query(GpuCard))
            assert [c.gpu.index for c in cards] == [0, 1]
            for card in cards:
                region = card.region
                assert region.width >= 30 and region.bottom <= size[1] - 1  # fully on screen above the footer
            before = cards[1].texts["vram"]
            write_claim(tmp_path, os.getpid(), [{"gpu": 1, "memory_bytes": 20_000 * MIB, "title": "VLLM::Worker_TP1", "load": 1.0}])
            await poll(app, pilot)
            after = cards[1].texts["vram"]
            assert before.startswith("0.3/24.0") and after.startswith("19.9/24.0"), (before, after)
            assert present(cards[1].fractions["power"]) > 0.5
            assert "NV4" in str(app.screen.query_one(TopologyPanel).content)
            await pilot.press("q")
        assert app.return_code == 0

    asyncio.run(scenario())


def test_lost_gpu_card_while_the_other_updates() -> None:
    lib = FakeNvmlLib(load_rig("2x3090-nvlink"))

    async def scenario() -> None:
        with installed(lib):
            app = make_app(RigSampler(NvmlBackend()), poll_interval=None)
            seen = Seen()
            async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
                await poll(app, pilot)
                lib.lost.add(1)
                lib.live[0].power_mw = 300_000
                await poll(app, pilot)
                card0, card1 = app.screen.query(GpuCard)
                assert card1.has_class("-lost")
                assert card1.texts["vram"] == "LOST"
                assert card0.texts["power"] == "300 W/350 W"
                assert "GPU1 is lost" in str(app.screen.query_one(TopologyPanel).content)
                assert [n.title for n in seen.notifications if "lost" in n.title] == ["GPU1 lost"]

    asyncio.run(scenario())


def test_failed_sampling_marks_stale_then_recovers() -> None:
    lib = FakeNvmlLib(load_rig("1x3090"))

    class Flaky(NvmlBackend):
        broken = False

        def sample(self) -> tuple[GpuSample, ...]:
            if self.broken:
                raise RuntimeError("driver hiccup")
            return super().sample()

    async def scenario() -> None:
        with installed(lib):
            backend = Flaky()
            app = make_app(RigSampler(backend), poll_interval=None)
            seen = Seen()
            async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
                await poll(app, pilot)
                backend.broken = True
                await poll(app, pilot)
                await poll(app, pilot)
                card = app.screen.query_one(GpuCard)
                assert card.has_class("-stale")
                assert len(seen.notifications) == 1  # once per outage
                backend.broken = False
                await poll(app, pilot)
                assert not card.has_class("-stale")

    asyncio.run(scenario())


def test_resizing_redraws_without_adding_history(tmp_path: Path) -> None:
    backend = SimulatedBackend(load_rig("2x3090-nvlink"), claims_dir=tmp_path)
    app = make_app(RigSampler(backend), poll_interval=None)

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await poll(app, pilot)
            await poll(app, pilot)
            card = app.screen.query(GpuCard).first()
            before = len(card._power)
            await pilot.resize_terminal(160, 48)
            await pilot.pause()
            await pilot.resize_terminal(100, 30)
            await pilot.pause()
            assert len(card._power) == before  # the same reading drawn again is not a new point

    asyncio.run(scenario())


def test_back_on_the_dashboard_the_cards_show_what_came_while_another_screen_was_up() -> None:
    """The dashboard builds nothing while hidden (the trends screen, the log): what the ticks gave
    it is drawn as soon as it is shown again, never the figures from before the owner left."""
    lib = FakeNvmlLib(load_rig("2x3090-nvlink"))

    def drawn(card: GpuCard) -> str:
        return "\n".join(card.render_line(y).text for y in range(card.size.height))

    async def scenario() -> None:
        with installed(lib):
            app = make_app(RigSampler(NvmlBackend()), poll_interval=None)
            async with app.run_test(size=(120, 40)) as pilot:
                lib.live[0].power_mw = 120_000
                await poll(app, pilot)
                card = app.screen.query(GpuCard).first()
                assert "120 W/350 W" in drawn(card)
                app.go("trends")
                await pilot.pause()
                lib.live[0].power_mw = 290_000
                await poll(app, pilot)
                assert card.texts["power"] == "290 W/350 W"  # the figures were taken while hidden
                app.go("dashboard")
                await pilot.pause()
                assert "290 W/350 W" in drawn(card) and "120 W" not in drawn(card)

    asyncio.run(scenario())
