"""Switching from the TUI: confirm, the live boot panel, the outcome; the log screen."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from rigctl.bench.live import ArmProgress, LiveWriter
from rigctl.serve import switch as transaction
from rigctl.serve.context import ServeContext
from rigctl.state.statefiles import read_record
from rigctl.tui.app import RigApp
from rigctl.tui.messages import SwitchFinished
from rigctl.tui.screens.boot import BootScreen
from rigctl.tui.screens.confirm import ConfirmScreen
from rigctl.tui.widgets.server_log import MAX_LINES, ServerLog
from rigctl.tui.widgets.serving_bar import ServingBar
from tests.support import present
from tests.support.serving import UNPREDICTED_MODEL, LongRequest, add_profile
from tests.tui.helpers import Seen, app_for, poll, settle, wait_switch


async def choose(app: RigApp, pilot: Pilot[None], name: str) -> None:
    await pilot.press("p")
    await settle(app, pilot)
    table = app.screen.query_one(DataTable)
    names = [str(table.get_row_at(i)[0]).strip() for i in range(table.row_count)]
    table.move_cursor(row=names.index(name))
    await pilot.pause()


async def ask_switch(app: RigApp, pilot: Pilot[None], name: str) -> None:
    """s on `name` in the profiles screen, and whatever it starts (the switch's cost) settled."""
    await choose(app, pilot, name)
    await pilot.press("s")
    await settle(app, pilot)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_switch_from_the_profiles_screen(serve_ctx: ServeContext, size: tuple[int, int]) -> None:
    app = app_for(serve_ctx)

    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=size, message_hook=seen) as pilot:
            await ask_switch(app, pilot, "good")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            assert isinstance(app.screen, BootScreen)
            await wait_switch(pilot, seen)
            outcome = str(app.screen.query_one("#boot-outcome", Static).content)
            assert "switched to good" in outcome and "KV capacity at 131,072" in outcome
            steps = str(app.screen.query_one("#boot-steps", Static).content)
            assert "application startup complete" in steps
            await pilot.press("enter")
            await pilot.press("d")
            await poll(app, pilot)
            assert "serving good" in app.screen.query_one(ServingBar).text

    asyncio.run(scenario())


def test_declined_confirmation_touches_nothing(serve_ctx: ServeContext) -> None:
    app = app_for(serve_ctx)

    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await ask_switch(app, pilot, "good")
            await pilot.press("n")
            assert app.screen.id == "profiles" and not app.serving_action_running
            assert seen.count(SwitchFinished) == 0

    asyncio.run(scenario())
    assert read_record() is None


def test_rollback_is_explained_in_the_boot_panel(serve_ctx: ServeContext, profiles: Path, port: int) -> None:
    add_profile(profiles, "long", "", port, top=UNPREDICTED_MODEL)
    assert transaction.switch(serve_ctx, "good").status == "switched"
    app = app_for(serve_ctx)

    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await choose(app, pilot, "long")
            await pilot.press("s")
            await settle(app, pilot)
            detail = str(app.screen.query_one("#confirm-detail", Static).content)
            assert "Qwen/Qwen3.6-27B-AWQ -> acme/Mystery-48B-AWQ" in detail  # the diff is shown before confirming
            await pilot.press("y")
            await wait_switch(pilot, seen)
            outcome = str(app.screen.query_one("#boot-outcome", Static).content)
            assert "long failed: max_model_len 131,072 needs more KV cache than fits" in outcome
            assert "rolled back: good serves again" in outcome
            steps = str(app.screen.query_one("#boot-steps", Static).content)
            assert "rolling back to good" in steps
            # both boots' phases: the failed one's up to where it failed, and the rollback's
            failed, rollback = steps.split("rolling back to good")
            assert "memory profiled" in failed.split("long failed")[0] and "weights loaded" in failed
            assert "KV cache allocated" in rollback and "application startup complete" in rollback

    asyncio.run(scenario())
    assert present(read_record()).profile == "good"


def test_log_screen_follows_and_stays_bounded_under_a_flood(serve_ctx: ServeContext) -> None:
    assert transaction.switch(serve_ctx, "good").status == "switched"
    log_path = Path(present(read_record()).log_path)
    app = app_for(serve_ctx)

    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await pilot.press("l")
            for _ in range(40):
                await pilot.pause(0.05)
                if app.screen.query_one(ServerLog).line_count:
                    break
            assert any("Application startup complete" in line for line in app.screen.query_one(ServerLog).lines)
            with open(log_path, "a") as handle:  # noqa: ASYNC230 - 30,000 lines at once, the flood under test
                handle.write("".join(f"(APIServer pid=1) INFO flood line {i}\n" for i in range(30_000)))
            for _ in range(60):
                await pilot.pause(0.05)
                if any("flood line 29999" in line for line in app.screen.query_one(ServerLog).lines[-5:]):
                    break
            log = app.screen.query_one(ServerLog)
            assert log.line_count <= MAX_LINES and "flood line 29999" in log.lines[-1]
            await pilot.press("d")  # the app still answers keys
            assert app.screen.id == "dashboard"

    asyncio.run(scenario())


def test_the_confirm_shows_the_running_requests_and_the_pool_change(
    serve_ctx: ServeContext, port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RIGCTL_SIM_SPEED", "0.05")  # the simulator inherits it: a long generation takes seconds
    assert transaction.switch(serve_ctx, "good").status == "switched"
    request = LongRequest(port, 2000)
    request.start()
    assert request.started.wait(60)
    app = app_for(serve_ctx)

    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await choose(app, pilot, "alt")
            await pilot.press("s")
            await settle(app, pilot)
            assert isinstance(app.screen, ConfirmScreen) and app.screen.cut
            detail = str(app.screen.query_one("#confirm-detail", Static).content)
            assert "KV pool 623,320 -> ~" in detail and "(good measured; alt predicted from" in detail
            assert "1 request(s) running (vLLM's gauges): the switch waits up to 120 s for them" in detail
            assert "without the front door their ends cannot be estimated" in detail
            assert "--quantization: awq_marlin -> fp8" in detail
            await pilot.press("c")  # cut it now
            await wait_switch(pilot, seen)
            outcome = str(app.screen.query_one("#boot-outcome", Static).content)
            assert "switched to alt" in outcome
            title = str(app.screen.query_one("#boot-title", Static).content)
            assert title.startswith("Switch to alt: done, booting "), title  # the boot's own clock, the drain apart

    asyncio.run(scenario())
    request.join(60)
    assert request.finish_reason != "length"  # cut, as asked
    assert present(read_record()).profile == "alt"


def test_a_switch_asked_while_a_bench_holds_the_rig_is_refused_before_the_confirm(serve_ctx: ServeContext) -> None:
    """The rig lock held by another process (as `rigctl bench` holds it for its whole run): the
    switch is refused before the question, saying who holds the rig; once it is free, asked."""
    hold = "\n".join(
        [
            "import sys",
            "from rigctl.serve.lock import RigLock",
            "with RigLock('bench plan-a'):",
            "    print('held', flush=True)",
            "    sys.stdin.read()",
        ]
    )
    holder = subprocess.Popen([sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "held"
    app = app_for(serve_ctx)
    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await ask_switch(app, pilot, "good")
            assert app.screen.id == "profiles" and not isinstance(app.screen, ConfirmScreen)
            assert seen.notified(f"the rig is busy: pid {holder.pid} (bench plan-a")
            assert holder.stdin is not None
            holder.stdin.close()  # the bench ends
            holder.wait(30)
            await pilot.press("s")
            await settle(app, pilot)
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")

    try:
        asyncio.run(scenario())
    finally:
        holder.kill()
        holder.wait()


def test_the_serving_bar_says_a_bench_runs_and_which_arm(serve_ctx: ServeContext, tmp_path: Path) -> None:
    """The mark a running bench keeps (bench/live.py, written as the bench writes it), shown on the
    dashboard's serving bar with each engine poll; gone when the bench ends."""
    writer = LiveWriter("seqs", tmp_path / "raw", "seqs2", "seqs8")
    writer(ArmProgress(2, 3, "candidate", "seqs8", "measuring", done=10, total=32))
    app = app_for(serve_ctx)

    async def scenario() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            await poll(app, pilot)
            bar = app.screen.query_one(ServingBar).text
            assert "bench seqs running: arm 2 of 3 (candidate seqs8, measuring)" in bar, bar
            writer.close()
            await poll(app, pilot)
            assert "bench" not in app.screen.query_one(ServingBar).text

    asyncio.run(scenario())


def test_the_serving_bar_says_a_dead_front_door_loudly(serve_ctx: ServeContext, port: int) -> None:
    """vLLM behind the door, the door killed: the engine still answers, the apps do not; the bar
    says so as an alert."""
    door = subprocess.Popen(
        [sys.executable, "-m", "rigctl", "gateway", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert door.stdout is not None
        while "the apps' address" not in (line := door.stdout.readline()):
            assert line, "the door did not open"
        assert transaction.switch(serve_ctx, "good").status == "switched"  # behind the door
    finally:
        door.kill()
        door.wait()
    app = app_for(serve_ctx)

    async def scenario() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            await poll(app, pilot)
            bar = app.screen.query_one(ServingBar)
            assert f"the front door on 127.0.0.1:{port} is gone: the apps are refused" in bar.text, bar.text
            assert bar.has_class("-alert") and not bar.has_class("-serving")

    asyncio.run(scenario())
