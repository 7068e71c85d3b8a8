"""The TUI's Rigs screen (w) driving another rig through a real sshd: s on the rig lists the
profiles its own rigctl has, the one picked is switched there after the question, its progress
shown line by line, and the rig serves it."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Log, OptionList

from rigctl.serve.context import ServeContext
from rigctl.tui.app import RigApp
from rigctl.tui.screens.confirm import ConfirmScreen
from rigctl.tui.screens.rigs import RemoteSwitchScreen, RigProfilesScreen
from tests.remote.conftest import Link
from tests.support.config_file import write_config
from tests.support.waiting import wait_until
from tests.tui.helpers import Seen, app_for, screen_text, settle, wait_for

pytestmark = pytest.mark.slow


async def switch_the_rig_to(app: RigApp, pilot: Pilot[None], profile: str) -> tuple[list[str | None], RemoteSwitchScreen]:
    """s on the highlighted rig, `profile` picked from its list (the one serving is disabled), yes
    to the question: the rig's profile ids and the view of the switch there."""
    await pilot.press("s")
    await wait_for(pilot, "the rig's profiles", lambda: isinstance(app.screen, RigProfilesScreen))
    listing = app.screen.query_one(OptionList)
    ids = [listing.get_option_at_index(i).id for i in range(listing.option_count)]
    assert listing.get_option("good").disabled  # it serves already
    listing.focus()
    listing.highlighted = ids.index(profile)
    await pilot.press("enter")
    await wait_for(pilot, "the question", lambda: isinstance(app.screen, ConfirmScreen))
    await pilot.press("y")
    await wait_for(pilot, "the switch view", lambda: isinstance(app.screen, RemoteSwitchScreen))
    view = app.screen
    assert isinstance(view, RemoteSwitchScreen)
    return ids, view


def test_s_on_a_rig_switches_it_over_ssh(link: Link, serve_ctx: ServeContext) -> None:
    there = link.there
    assert there.rigctl("switch", "good").returncode == 0
    write_config(link.rig_table())
    app = app_for(serve_ctx)
    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(120, 40), message_hook=seen) as pilot:
            await pilot.press("w")
            await settle(app, pilot)
            assert app.screen.query_one(DataTable).row_count == 1
            assert "box2" in screen_text(app) and "not in Prometheus" in screen_text(app)  # no [prometheus] url here
            ids, view = await switch_the_rig_to(app, pilot, "alt")
            assert "good" in ids and "alt" in ids  # the rig's own profiles, asked of its rigctl
            await wait_for(pilot, "the switch there to end", lambda: view.code is not None)
            assert view.code == 0, "\n".join(view.query_one(Log).lines)
            assert any("alt: " in line for line in view.query_one(Log).lines)  # its progress, line by line
            assert seen.notified("box2: alt: switched")
            await pilot.press("escape")
            await settle(app, pilot)

    asyncio.run(scenario())
    assert there.state()["profile"] == "alt" and there.serves()


def test_quitting_the_tui_mid_switch_leaves_the_switch_there_to_finish(link: Link, serve_ctx: ServeContext) -> None:
    """The TUI quit while the rig's boot hangs (for ten minutes, by its boot_timeout): the exit is
    not held by the switch's ssh, and the switch there goes on; when its boot dies, the rig rolls
    back on its own."""
    there = link.there
    assert there.rigctl("switch", "good").returncode == 0
    there.add_profile("stuck", '[env]\nRIGCTL_SIM_HANG_AT = "graphs"\n')
    (there.profiles / "stuck.toml").write_text((there.profiles / "stuck.toml").read_text() + "[rigctl]\nboot_timeout = 600\n")
    write_config(link.rig_table())
    app = app_for(serve_ctx)

    async def scenario() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("w")
            await settle(app, pilot)
            _, view = await switch_the_rig_to(app, pilot, "stuck")
            await wait_for(
                pilot, "the hanging boot's progress", lambda: any("stuck: " in line for line in view.query_one(Log).lines)
            )
            app.exit()

    asyncio.run(scenario())  # returns at once: were the exit held by the ssh, ten minutes (the test's timeout first)
    state = there.state()
    assert (state["status"], state["target"]) == ("switching", "stuck")  # the rig's switch still runs, unwatched
    os.killpg(there.record()["pid"], signal.SIGKILL)  # its hanging boot dies: the rig's own switch takes it from there
    wait_until("the rig's switch to end", lambda: there.state_if_any().get("status") not in (None, "switching"), timeout=120)
    assert there.state()["profile"] == "good" and there.serves()
    there.check_invariants()
