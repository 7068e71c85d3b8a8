"""The TUI's first frame waits for the dashboard alone: the serving context, the live pipeline (the
record, the alerts, the engine's poll) and the switch are made after it (docs/guide/costs.md has
what that buys, measured by benchmarks/bench_tui.py). Held here by what is loaded, never by a time."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rigctl.cli.context import make_context
from rigctl.errors import RigctlError
from rigctl.serve.context import ServeContext
from rigctl.tui.app import make_app
from tests.support import present
from tests.tui.helpers import Seen, settle

# What observes and what serves: none of it is loaded when the first frame is drawn.
MADE_AFTER = (
    "rigctl.observe",
    "rigctl.record",
    "rigctl.alerts",
    "rigctl.monitor",
    "rigctl.engine.poller",
    "rigctl.engine.client",
    "rigctl.gateway",
    "rigctl.serve.launchers",
    "rigctl.serve.switch",
    "rigctl.profiles.store",
    "rigctl.state.serving",
    "rigctl.state.boots",
    "rigctl.bench.live",
)

# The app as `rigctl` makes it (cli/tui.py), run headless; when it goes live (after its first
# refresh) it prints what was loaded before, then what it made, and quits.
PROBE = """
import argparse, asyncio, sys
from functools import partial
from pathlib import Path
from rigctl.cli import common
from rigctl.cli.context import make_context
from rigctl.config import load_settings
from rigctl.tui import app as tui_app
from rigctl.tui.app import RigApp

class Probe(RigApp):
    CSS_PATH = Path(tui_app.__file__).with_name(RigApp.CSS_PATH)  # a relative one is found beside the class's file

    def _go_live(self):
        print(' '.join(sorted(m for m in sys.modules if m.startswith('rigctl'))))
        super()._go_live()

    def _live_ready(self, made, problem):
        super()._live_ready(made, problem)
        print(type(self.serve).__name__, type(self.pipeline).__name__)
        self.exit()

args = argparse.Namespace(sim="2x3090-nvlink")
settings = load_settings()
sampler = common.open_sampler(args, with_host=True)
app = Probe(sampler, partial(make_context, args, sampler=sampler, settings=settings), settings=settings, poll_interval=None)

async def main():
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(200):
            if not app.is_running:
                break
            await pilot.pause(0.05)

asyncio.run(main())
sampler.close()
"""


def test_the_first_frame_loads_nothing_that_observes_or_serves(profiles: Path, sim_env: dict[str, str]) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], env=sim_env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    before, made = out.stdout.strip().splitlines()[-2:]
    loaded = before.split()
    assert "rigctl.tui.screens.dashboard" in loaded  # the probe saw the first frame's modules
    assert [m for m in loaded if m.startswith(MADE_AFTER)] == []
    assert made == "ServeContext LivePipeline"


@pytest.mark.usefixtures("profiles")
def test_the_serving_context_is_made_once_after_the_first_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCTL_SIM", "2x3090-nvlink")
    args = argparse.Namespace(sim="2x3090-nvlink")
    made: list[ServeContext] = []

    def make() -> ServeContext:
        made.append(make_context(args))
        return made[-1]

    first = make_context(args)
    app = make_app(present(first.sampler, "sampler"), make, poll_interval=None, settings=first.settings)
    assert app.serve is None and not made  # nothing made before the app runs

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(app, pilot)
            assert len(made) == 1
            serve = present(app.serve, "the app's context")
            assert serve.launcher is made[0].launcher and serve.store is made[0].store
            assert app.dashboard.last_snapshot is not None  # and it polled

    asyncio.run(scenario())


@pytest.mark.usefixtures("profiles")
def test_a_context_that_cannot_be_made_is_said_and_the_rig_is_still_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCTL_SIM", "2x3090-nvlink")
    ctx = make_context(argparse.Namespace(sim="2x3090-nvlink"))

    def broken() -> ServeContext:
        raise RigctlError("config.toml: [server] launcher: 'podman' is not a launcher")

    app = make_app(present(ctx.sampler, "sampler"), broken, poll_interval=None, settings=ctx.settings)
    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await settle(app, pilot)
            assert seen.notified("'podman' is not a launcher: switching is off in this session")
            assert app.serve is None
            assert app.dashboard.last_snapshot is not None
            app.request_switch("good")  # refused in words, nothing raised
            await pilot.pause()
            assert seen.notified("switching needs a launcher")

    asyncio.run(scenario())


@pytest.mark.usefixtures("profiles")
def test_q_quits_while_the_serving_context_is_still_being_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a loaded machine making the context (its imports) took seconds, and `q` waited behind it
    (3.2 s at load 9). It is made in a thread: the app quits while the making has not returned."""
    monkeypatch.setenv("RIGCTL_SIM", "2x3090-nvlink")
    ctx = make_context(argparse.Namespace(sim="2x3090-nvlink"))
    making, release = threading.Event(), threading.Event()
    returned: list[bool] = []

    def slow() -> ServeContext:
        making.set()
        release.wait(60)  # as long as a loaded machine's imports: until the test has seen the quit
        returned.append(True)
        return ctx

    app = make_app(present(ctx.sampler, "sampler"), slow, poll_interval=None, settings=ctx.settings)

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            while not making.is_set():
                await pilot.pause(0.05)
            await pilot.press("q")
            while app.is_running:
                await pilot.pause(0.05)

    try:
        asyncio.run(scenario())
        assert not app.is_running and returned == []  # it quit before the making returned
    finally:
        release.set()
