"""The command palette holds rigctl's own actions, each taking the same path as its key: a switch
found there asks first, with what it costs, like s on the profiles screen."""

from __future__ import annotations

import asyncio

from textual.command import CommandPalette
from textual.widgets import Input

from rigctl.serve import switch as transaction
from rigctl.serve.steps import ServeContext
from rigctl.tui.screens.confirm import ConfirmScreen
from tests.tui.helpers import app_for, poll, settle, wait_for


def test_the_palette_lists_the_rigs_actions_and_a_switch_from_it_asks_first(serve_ctx: ServeContext) -> None:
    assert transaction.switch(serve_ctx, "good").status == "switched"
    app = app_for(serve_ctx)

    async def scenario() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await poll(app, pilot)
            titles = [c.title for c in app.get_system_commands(app.screen)]
            assert {"Switch to good", "Switch to alt", "Restart the served profile", "Stop the vLLM server"} <= set(titles)
            assert {"Open trends", "Open processes", "Open logs"} <= set(titles)
            await pilot.press("ctrl+p")
            assert isinstance(app.screen, CommandPalette)
            await wait_for(pilot, "the palette's input focused", lambda: isinstance(app.focused, Input))
            await pilot.press(*"Switch to alt")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await settle(app, pilot)  # the cost of the switch is worked out off the UI thread
            assert isinstance(app.screen, ConfirmScreen) and "Switch to alt" in app.screen.question
            await pilot.press("n")  # declined: good keeps serving
            await pilot.press("ctrl+p")
            await wait_for(pilot, "the palette's input focused", lambda: isinstance(app.focused, Input))
            await pilot.press(*"Open trends")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await wait_for(pilot, "the trends screen", lambda: app.screen.id == "trends")

    asyncio.run(scenario())
