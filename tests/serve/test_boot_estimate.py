"""The boot panel's ETA: the median of the profile's last boots in the history, said as what it is."""

from __future__ import annotations

import asyncio

from textual.widgets import Static

from rigctl.serve import switch as transaction
from rigctl.serve.context import ServeContext
from rigctl.state.boots import BootRecord, expected_boot, read_all
from tests.tui.helpers import Seen, app_for, poll, wait_switch


def boot(profile: str, seconds: float) -> BootRecord:
    return BootRecord(profile, "h", 0.0, [], None, None, None, None, None, None, None, None, None, seconds)


def test_the_median_of_the_last_five_of_that_profile() -> None:
    records = [boot("good", 300.0)] + [boot("good", s) for s in (40, 42, 41, 90, 39)] + [boot("alt", 10.0)]
    estimate = expected_boot(records, "good")
    assert estimate is not None and estimate.seconds == 41 and estimate.boots == 5  # the cold first boot has aged out
    assert "12 s of ~41 s (its last 5 boots' median)" == estimate.describe(12.4)
    assert expected_boot(records, "never-booted") is None


def test_the_boot_panel_says_elapsed_against_the_profiles_last_boots(serve_ctx: ServeContext) -> None:
    assert transaction.switch(serve_ctx, "good").status == "switched"  # one boot of good in the history
    last = read_all()[-1].boot_seconds
    app = app_for(serve_ctx)
    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(120, 40), message_hook=seen) as pilot:
            await poll(app, pilot)
            app.start_serving_action("good", lambda ctx: transaction.switch(ctx, "good", rollback=False))
            await pilot.pause()
            title = str(app.screen.query_one("#boot-title", Static).content)
            assert "letting the running requests finish" in title or "booting" in title, title  # the drain on its own clock
            for _ in range(200):  # until the boot begins: its clock starts there
                title = str(app.screen.query_one("#boot-title", Static).content)
                if "booting" in title:
                    break
                await pilot.pause(0.05)
            assert f"of ~{last:.0f} s (its last boot)" in title, title
            await wait_switch(pilot, seen)

    asyncio.run(scenario())
