"""The command palette holds rigctl's own actions, each taking the same path as its key: a switch
found there asks first, with what it costs, like s on the profiles screen."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.widgets import Input

from rigctl.bench.plan_file import plans_dir
from rigctl.serve import switch as transaction
from rigctl.serve.context import ServeContext
from rigctl.state.serving import observe
from rigctl.tui.screens.confirm import ConfirmScreen
from tests.tui.helpers import Seen, app_for, poll, settle, wait_for


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


QUICK_PLAN = """control = "good"
candidate = "alt"
[workload]
kind = "chat-short"
concurrency = 2
requests = 4
prompt_tokens = 64
max_tokens = 8
warmup_requests = 1
[gate]
metric = "output_tok_per_s"
min_change = 0.25
"""


@pytest.mark.slow
def test_a_bench_run_from_the_palette_asks_first_runs_as_rigctl_bench_and_says_how_it_ended(
    serve_ctx: ServeContext, profiles: Path
) -> None:
    assert transaction.switch(serve_ctx, "good").status == "switched"
    plans = plans_dir()
    plans.mkdir(parents=True)
    (plans / "quick.toml").write_text(QUICK_PLAN)
    app = app_for(serve_ctx)
    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(120, 40), message_hook=seen) as pilot:
            await poll(app, pilot)
            assert "Run bench quick" in [c.title for c in app.get_system_commands(app.screen)]
            await pilot.press("ctrl+p")
            await wait_for(pilot, "the palette's input focused", lambda: isinstance(app.focused, Input))
            await pilot.press(*"Run bench quick")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await wait_for(pilot, "the question", lambda: isinstance(app.screen, ConfirmScreen))
            assert isinstance(app.screen, ConfirmScreen) and app.screen.question == "Run bench quick?"
            await pilot.press("y")
            await wait_for(pilot, "the bench screen", lambda: app.screen.id == "bench")
            await wait_for(pilot, "the bench's ending", lambda: seen.notified("bench quick: "), seconds=300)

    asyncio.run(scenario())
    said = next(n.message for n in seen.notifications if n.message.startswith("bench quick: "))
    # the verdict of a real run, as `rigctl bench` printed it last; never a failure to start
    assert "it failed" not in said, said
    assert any(word in said for word in ("the run ended", "rejected", "inconclusive")), said
    assert observe(serve_ctx.settings).active_profile == "good"  # the control put back, as the CLI's bench does
