"""The key map: the help screen lists every binding, and each listed binding does what it says,
at 80x24 and 160x48, on the simulated 2x3090 rig with a real simulated vLLM serving."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static, TabbedContent

from rigctl.serve import switch as transaction
from rigctl.serve.context import ServeContext
from rigctl.state.statefiles import read_record
from rigctl.tui.app import RigApp, help_scopes
from rigctl.tui.messages import Polled, SwitchFinished
from rigctl.tui.screens.boot import BootScreen
from rigctl.tui.screens.confirm import ConfirmScreen
from rigctl.tui.screens.help import HelpScreen, help_rows, key_label
from rigctl.tui.screens.trends import TrendsScreen
from rigctl.tui.widgets.server_log import ServerLog
from tests.support import present
from tests.tui.helpers import Seen, app_for, poll, screen_text, settle, wait_for, wait_switch

SIZES = [(80, 24), (160, 48)]


def first_key(keys: str) -> str:
    return keys.split(",")[0]


async def on_screen(app: RigApp, pilot: Pilot[Any], scope: str) -> None:
    """Bring up the screen where a binding of `scope` applies."""
    app.go("dashboard" if scope in ("everywhere", "boot panel", "confirm") else scope)
    await settle(app, pilot)
    if scope == "boot panel":
        app.action_show_boot()
        await pilot.pause()
        assert isinstance(app.screen, BootScreen)
    if scope == "confirm":
        await pilot.press("R")
        assert isinstance(app.screen, ConfirmScreen)


async def check_help(app: RigApp, pilot: Pilot[Any]) -> None:
    assert isinstance(app.screen, HelpScreen)
    await pilot.press("escape")
    assert not isinstance(app.screen, HelpScreen)


async def check_confirm(app: RigApp, pilot: Pilot[Any], question: str) -> None:
    await settle(app, pilot)  # a switch's confirm comes once its cost is known (a worker)
    assert isinstance(app.screen, ConfirmScreen) and question in app.screen.question
    await pilot.press("n")
    assert not isinstance(app.screen, ConfirmScreen)
    assert read_record() is not None and read_record().profile == "good"  # declined: nothing touched


async def check_refresh(app: RigApp, pilot: Pilot[Any], seen: Seen) -> None:
    await wait_for(pilot, "r did not poll the rig and the engine", lambda: seen.since_mark(Polled) > 0, seconds=30)


async def check_theme(app: RigApp, pilot: Pilot[Any]) -> None:
    assert isinstance(app.screen, CommandPalette)
    await pilot.press("escape")


async def check_boot(app: RigApp, pilot: Pilot[Any]) -> None:
    assert isinstance(app.screen, BootScreen) and app.screen.done


def log_title(app: RigApp) -> str:
    return str(app.screen.query_one(".log-title", Static).content)


async def check_for(action: str, app: RigApp, pilot: Pilot[Any], seen: Seen) -> None:
    """What pressing the key of `action` must have done."""
    if action == "app.help":
        await check_help(app, pilot)
    elif action in (
        "app.show_dashboard",
        "app.show_profiles",
        "app.show_logs",
        "app.show_history",
        "app.show_bench",
        "app.show_processes",
        "app.show_trends",
        "app.show_rigs",
    ):
        assert app.screen.id == action.removeprefix("app.show_")
    elif action == "app.pick_profile":
        assert app.screen.id == "profiles" and seen.notified("then s to switch")
    elif action == "app.show_boot":
        await check_boot(app, pilot)
    elif action == "app.restart":
        await check_confirm(app, pilot, "Restart good?")
    elif action == "app.stop":
        await check_confirm(app, pilot, "Stop good?")
    elif action == "app.refresh":
        await check_refresh(app, pilot, seen)
    elif action == "app.change_theme":
        await check_theme(app, pilot)
    elif action == "screen.switch":
        await check_confirm(app, pilot, "Switch to ")
    elif action == "screen.reload":
        assert app.screen.id in ("profiles", "history", "bench", "rigs")
        await settle(app, pilot)
        table = app.screen.query_one(DataTable)
        if app.screen.id == "rigs":  # no [rigs.NAME] and no Prometheus here: the screen says where figures come from
            assert table.row_count == 0 and "no [prometheus] url" in str(app.screen.query_one("#rigs-note", Static).content)
        elif app.screen.id == "bench":  # no bench was run on this rig: the screen says where runs would be
            assert table.row_count == 0 and "no kept runs in" in str(app.screen.query_one("#bench-report", Static).content)
        else:
            assert table.row_count >= 1  # the profiles, or the one boot recorded
    elif action.startswith("screen.tab("):  # the history screen's tabs, a key each
        tab = action.removeprefix("screen.tab(").strip("')")
        assert app.screen.id == "history" and app.screen.query_one("#history-tabs", TabbedContent).active == tab
    elif action == "screen.switch_rig":  # no rig listed: nothing to ask
        assert app.screen.id == "rigs"
    elif action == "screen.clear":
        assert app.screen.query_one(ServerLog).line_count == 0
    elif action == "screen.back":  # escape on the log screen, no search open
        assert app.screen.id == "dashboard"
    elif action == "screen.own_polls":  # hidden by default: o shows them
        assert "rigctl's polls hidden" not in log_title(app)
    elif action == "screen.problems":
        assert "warnings and errors only (w)" in log_title(app)
    elif action == "screen.search":
        box = app.screen.query_one("#log-search", Input)
        await wait_for(pilot, "the search box focused", lambda: box.has_focus)  # (Textual focuses on its next turn)
        assert box.has_class("-open")
        await pilot.press("escape")
        assert not box.has_class("-open") and not box.has_focus and app.screen.id == "logs"
    elif action.startswith("screen.window("):
        assert isinstance(app.screen, TrendsScreen) and action == f"screen.window('{app.screen.window}')"
    elif action == "screen.next_match":
        assert seen.notified("nothing searched yet")
    elif action == "app.pop_screen":
        assert not isinstance(app.screen, BootScreen) and app.screen.id == "dashboard"
    elif action == "screen.answer('cut')":  # nothing runs on the restart's server: c does nothing there
        assert isinstance(app.screen, ConfirmScreen) and not app.screen.cut
        await pilot.press("n")
    elif action == "screen.answer('yes')":
        await wait_for(pilot, "the restart did not finish", lambda: seen.since_mark(SwitchFinished) > 0)  # it boots good again
        assert isinstance(app.screen, BootScreen) and app.screen.done
        assert "switched to good" in str(present(app.boot).query_one("#boot-outcome", Static).content)
    elif action == "screen.answer(None)":
        assert not isinstance(app.screen, ConfirmScreen) and not app.serving_action_running
    elif action == "app.quit":
        pass  # checked after run_test returns
    else:
        raise AssertionError(f"no check written for {action}: add one")


def rows_to_press(app: RigApp) -> list[tuple[str, str, str]]:
    """(scope, key, action) for every help row; quit last, the confirm 'yes' just before it."""
    rows = [(r.scope, first_key(r.keys), r.action) for r in help_rows(app, help_scopes())]
    for key in ("n,escape",):  # the second key of a row is exercised too where it differs in kind
        rows.append(("confirm", key.split(",")[1], "screen.answer(None)"))
    order = {"screen.answer('yes')": 1, "app.quit": 2}
    return sorted(rows, key=lambda row: order.get(row[2], 0))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_help_binding_works(serve_ctx: ServeContext, size: tuple[int, int]) -> None:
    assert transaction.switch(serve_ctx, "good").status == "switched"
    app = app_for(serve_ctx)
    pressed: list[str] = []

    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=size, message_hook=seen) as pilot:
            await poll(app, pilot)
            app.start_serving_action("good", lambda ctx: transaction.switch(ctx, "good", rollback=False))
            await wait_switch(pilot, seen)  # a boot panel exists for b and the boot panel's keys
            await pilot.press("enter")
            for scope, key, action in rows_to_press(app):
                await on_screen(app, pilot, scope)
                if action == "screen.clear":
                    app.screen.query_one(ServerLog).write_lines(["a line to clear"])
                seen.mark()
                await pilot.press(key)
                await pilot.pause()
                await check_for(action, app, pilot, seen)
                pressed.append(action)

    asyncio.run(scenario())
    assert app.return_code == 0 and pressed[-1] == "app.quit"
    assert {"app.help", "app.restart", "app.stop", "app.show_history", "screen.switch"} <= set(pressed)


def test_help_screen_shows_keys_and_explains_na(serve_ctx: ServeContext) -> None:
    app = app_for(serve_ctx)

    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await poll(app, pilot)
            await pilot.press("question_mark")
            text = screen_text(app)
            for row in help_rows(app, help_scopes())[:8]:  # the first rows are on screen without scrolling
                assert key_label(row.keys) in text
            help_screen = app.screen
            assert isinstance(help_screen, HelpScreen)
            na = str(help_screen.query_one("#help-na", Static).content)
            assert "NotSupported" in na and "--sim" in na and "two scrapes" in na

    asyncio.run(scenario())


def test_navigation_closes_dialogs_and_keeps_the_boot_panel(serve_ctx: ServeContext) -> None:
    app = app_for(serve_ctx)

    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await pilot.press("p")
            await settle(app, pilot)
            table = app.screen.query_one(DataTable)
            names = [str(table.get_row_at(i)[0]).strip() for i in range(table.row_count)]
            table.move_cursor(row=names.index("good"))
            await pilot.press("s")
            await settle(app, pilot)
            await pilot.press("y")
            await pilot.press("d")  # leave the boot panel while it boots
            assert app.screen.id == "dashboard" and len(app.screen_stack) == 2
            await wait_switch(pilot, seen)
            await pilot.press("b")
            assert isinstance(app.screen, BootScreen) and app.screen.done
            assert "switched to good" in str(app.screen.query_one("#boot-outcome", Static).content)
            await pilot.press("question_mark", "l")  # a dialog takes the keys: l does not act under it
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape", "l")  # the boot panel under it closes as the logs open
            assert app.screen.id == "logs" and len(app.screen_stack) == 2

    asyncio.run(scenario())


def test_quit_during_a_switch_asks_twice(serve_ctx: ServeContext) -> None:
    app = app_for(serve_ctx)

    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            app.start_serving_action("good", lambda ctx: transaction.switch(ctx, "good"))
            await pilot.press("q")
            assert app.is_running and seen.notified("q again to quit")
            await wait_switch(pilot, seen)
            await pilot.press("q")  # the switch is over: one q quits

    asyncio.run(scenario())
    assert app.return_code == 0
