"""At 80x24 a notification never covers a modal's buttons: on a modal the toasts wait, and show
when the screen under it comes back."""

from __future__ import annotations

import asyncio

from rigctl.gpu.sampler import RigSampler
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import load_rig
from rigctl.tui.app import make_app
from rigctl.tui.screens.confirm import ConfirmScreen
from tests.tui.helpers import screen_text, settle

SAID = "said during the dialog"  # one line of a toast


def test_a_toast_waits_while_the_confirm_is_up_and_shows_after() -> None:
    shown: dict[str, str] = {}

    async def scenario() -> None:
        app = make_app(RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"))), poll_interval=None)
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await settle(app, pilot)
            detail = "\n".join(f"--flag-{i}: before -> after" for i in range(14))  # the tallest dialog
            app.push_screen(ConfirmScreen("Switch to alt?", detail, cut=True))
            await pilot.pause()
            for n in range(3):
                app.notify(f"{SAID} ({n})", timeout=60)
            await pilot.pause(0.3)
            shown["modal"] = screen_text(app)
            await pilot.press("n")
            await pilot.pause(0.3)
            shown["after"] = screen_text(app)

    asyncio.run(scenario())
    assert all(label in shown["modal"] for label in ("Yes, let them finish (y)", "Cut now (c)", "No (n)"))
    assert SAID not in shown["modal"]
    assert SAID in shown["after"]
