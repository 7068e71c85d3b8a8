"""What rigctl says is shown as written: names from config and files carry brackets
(`[prometheus] url`, `[rigs.box2]`, a path with `[/]`) that Textual's markup would eat, or fail
on. Every notification is plain text, and every Static the TUI builds is created without markup."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
from pathlib import Path

from rigctl.gpu.sampler import RigSampler
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import load_rig
from rigctl.tui.app import make_app
from tests.tui.helpers import Seen, screen_text, settle

TUI = Path(__file__).resolve().parents[2] / "rigctl" / "tui"
BRACKETED = "[rigs.box2] /t/[/]x [b]not bold[/b]"  # short enough for one line of a toast at 80 columns


def test_brackets_in_notifications_and_on_the_rigs_screen_are_shown_as_written() -> None:
    seen = Seen()
    shown: dict[str, str] = {}

    async def scenario() -> None:
        app = make_app(RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"))), poll_interval=None)
        async with app.run_test(size=(80, 24), message_hook=seen, notifications=True) as pilot:
            await settle(app, pilot)
            app.go("rigs")
            await settle(app, pilot)
            shown["rigs"] = screen_text(app)
            app.screen.notify(BRACKETED, timeout=30)  # a screen's notify, as the screens call it
            await pilot.pause()
            shown["toast"] = screen_text(app)

    asyncio.run(scenario())
    assert "no [prometheus] url in config.toml" in shown["rigs"]
    assert "[b]not bold[/b]" in shown["toast"] and "[rigs.box2]" in shown["toast"]
    assert [n.markup for n in seen.notifications if n.message == BRACKETED] == [False]


def test_every_static_the_tui_builds_is_plain_text() -> None:
    """A Static created with markup reads `[x]` in whatever it is later updated with."""
    marked: list[str] = []
    for path in sorted(TUI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Static":
                plain = any(
                    k.arg == "markup" and isinstance(k.value, ast.Constant) and k.value.value is False for k in node.keywords
                )
                if not plain:
                    marked.append(f"{path.relative_to(TUI.parents[1])}:{node.lineno}")
    assert not marked, marked


def test_a_process_name_on_a_gpu_card_is_shown_as_written() -> None:
    """The card's bottom border names its largest holder; a process may be called anything."""
    from textual.app import App, ComposeResult

    from rigctl.gpu.model import GpuProcess
    from rigctl.tui.widgets.gpu_card import GpuCard

    snapshot = RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"))).snapshot()
    sample = dataclasses.replace(snapshot.samples[0], processes=(GpuProcess(pid=4242, used_memory=2**31, name="[b]x[/b]"),))
    card = GpuCard(snapshot.info.gpus[0])
    shown: list[str] = []

    class OneCard(App[None]):
        CSS = "GpuCard { border: round white; }"  # the app's stylesheet draws the cards' borders

        def compose(self) -> ComposeResult:
            yield card

    async def scenario() -> None:
        app = OneCard()
        async with app.run_test(size=(80, 12)) as pilot:
            card.show(sample)
            await pilot.pause()
            card.show(sample, fresh=False)  # the same holders again: the subtitle is left as it is
            await pilot.pause()
            shown.append(screen_text(app))

    asyncio.run(scenario())
    assert "[b]x[/b] 2.0 GiB" in shown[0], shown[0]
