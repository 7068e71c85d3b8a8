"""The app as an owner meets it: layouts at the three sizes, notifications for what happened
while away, the theme remembered across starts, NO_COLOR."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path

import httpx
import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from rigctl.config import load_settings
from rigctl.gpu.sampler import RigSampler
from rigctl.serve import switch as transaction
from rigctl.serve.context import ServeContext
from rigctl.sim.rigspec import load_rig
from rigctl.state.statefiles import read_record
from rigctl.tui.app import RigApp, make_app
from rigctl.tui.widgets.engine_panel import EnginePanel
from rigctl.tui.widgets.gpu_card import GpuCard
from rigctl.tui.widgets.log_tail import LogTail
from rigctl.tui.widgets.topology_panel import TopologyPanel
from tests.alerts.test_edges import wait_gone
from tests.support import present
from tests.support.config_file import write_config
from tests.tui.helpers import Seen, app_for, poll, screen_text

SIZES = [(80, 24), (120, 40), (200, 60)]


def figures_shown(app: RigApp) -> list[str]:
    """The numbers the widgets were given, each of which must appear whole on the screen."""
    out = []
    for card in app.screen.query(GpuCard):
        out += [card.texts["vram"], card.texts["power"], *card.texts["stats"].split("  "), *card.texts["bus"].split("  ")]
    lines = app.screen.query_one(EnginePanel).lines
    out += re.findall(r"[\d,]+\.?\d*%?(?: tok| tok/s| GiB| W|x\))?", lines["kv"])
    out += [lines["load"], lines["latency"]]
    return [f for f in out if f.strip()]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_dashboard_shows_every_figure_whole_at_each_size(serve_ctx: ServeContext, size: tuple[int, int]) -> None:
    assert transaction.switch(serve_ctx, "good").status == "switched"
    app = app_for(serve_ctx)

    async def scenario() -> None:
        async with app.run_test(size=size) as pilot:
            await poll(app, pilot)
            await poll(app, pilot)  # two scrapes: the interval figures exist
            text = screen_text(app)
            lines = text.splitlines()
            assert len(lines) <= size[1] and all(len(line) <= size[0] for line in lines)
            for figure in figures_shown(app):
                assert figure in text, f"{figure!r} is not shown whole at {size}"
            assert "GPU0-GPU1 NV4" in text and "serving good" in text
            tail = app.screen.query_one(LogTail)
            assert tail.display == (size[1] >= 36)  # the log joins the dashboard only where it fits
            assert tail.following == (size[1] >= 36)
            if size[1] >= 36:
                assert "GPU0    X     NV4" in text  # the full matrix
            if size == (80, 24):
                topo = str(app.screen.query_one(TopologyPanel).content)
                assert "custom all-reduce" not in topo  # informational notes give way on a short screen
            for card in app.screen.query(GpuCard):
                assert card.region.bottom <= size[1] - 1  # above the footer, not scrolled away

    asyncio.run(scenario())


def test_engine_death_notifies(serve_ctx: ServeContext) -> None:
    assert transaction.switch(serve_ctx, "good").status == "switched"
    app = app_for(serve_ctx)

    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await poll(app, pilot)
            pid = present(present(read_record()).pid)
            os.kill(pid, signal.SIGKILL)
            wait_gone(pid)
            await poll(app, pilot)
            died = [n for n in seen.notifications if n.title == "engine died"]
            assert len(died) == 1 and f"pid {pid}" in died[0].message and died[0].severity == "error"
            await poll(app, pilot)
            assert len([n for n in seen.notifications if n.title == "engine died"]) == 1

    asyncio.run(scenario())


def test_an_alert_is_a_notification_and_a_mark_on_the_serving_bar_until_it_clears(
    serve_ctx: ServeContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from rigctl.sim.rig import SimulatedBackend

    faults = tmp_path / "gpu-faults.json"
    monkeypatch.setenv("RIGCTL_SIM_GPU_FAULTS", str(faults))
    assert transaction.switch(serve_ctx, "good").status == "switched"
    app = make_app(RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"))), serve_ctx, poll_interval=None)
    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await poll(app, pilot)
            assert "alert" not in screen_text(app)
            faults.write_text(json.dumps({"lost": [1]}))
            await poll(app, pilot)
            lost = [n for n in seen.notifications if n.title == "GPU1 lost"]
            assert len(lost) == 1 and lost[0].severity == "error" and "GpuIsLost" in lost[0].message
            await poll(app, pilot)
            assert "▲ 1 alert: GPU1 lost" in screen_text(app)  # it lasts after the notification fades
            faults.unlink()
            await poll(app, pilot)
            assert [n.title for n in seen.notifications if n.title.startswith("cleared")] == ["cleared: GPU1 lost"]
            assert "▲" not in screen_text(app)

    asyncio.run(scenario())


def test_the_processes_on_each_gpu_on_the_cards_and_their_screen(serve_ctx: ServeContext) -> None:
    import psutil
    from textual.widgets import DataTable

    assert transaction.switch(serve_ctx, "good").status == "switched"
    app = app_for(serve_ctx)

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await poll(app, pilot)
            subtitles = [str(card.border_subtitle) for card in app.screen.query(GpuCard)]
            assert [s.split(" ")[:2] for s in subtitles] == [["worker", "TP0"], ["worker", "TP1"]], subtitles
            await pilot.press("P")
            await poll(app, pilot)
            table = app.screen.query_one("#processes-table", DataTable)
            rows = [table.get_row_at(i) for i in range(table.row_count)]
            assert [(r[0], r[3]) for r in rows] == [("GPU0", "worker TP0"), ("GPU1", "worker TP1")], rows
            assert all(r[1].isdigit() and psutil.pid_exists(int(r[1])) and r[4].endswith("GiB") and r[5] for r in rows), rows

    asyncio.run(scenario())


def test_theme_is_remembered_and_comments_kept(serve_ctx: ServeContext) -> None:
    path = write_config("# my rig\n[tui]\n# the refresh I like\nrig_interval = 1.0\n")
    app = app_for(serve_ctx, load_settings())

    async def pick() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            app.theme = "nord"  # what picking it in the theme palette (t) does
            await pilot.pause()

    asyncio.run(pick())
    text = path.read_text()
    assert "# my rig" in text and "# the refresh I like" in text and 'theme = "nord"' in text
    again = app_for(serve_ctx, load_settings())

    async def restart() -> None:
        async with again.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert again.theme == "nord"

    asyncio.run(restart())


def test_unknown_theme_in_config_is_said_not_fatal(serve_ctx: ServeContext) -> None:
    path = write_config('[tui]\ntheme = "no-such-theme"\n')
    app = app_for(serve_ctx, load_settings())

    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await pilot.pause()
            assert app.theme == "textual-dark"
            assert seen.notified("no-such-theme")

    asyncio.run(scenario())
    assert "no-such-theme" in path.read_text()  # a bad value is reported, never rewritten behind the owner


def test_no_color_is_honoured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from rigctl.sim.rig import SimulatedBackend

    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(RigSampler(SimulatedBackend(load_rig("1x3090"), claims_dir=tmp_path)), poll_interval=None)

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await poll(app, pilot)
            assert app.no_color
            svg = app.export_screenshot()
            colours = set(re.findall(r"fill: (#[0-9a-f]{6})", svg)) - {"#c5c8c6"}  # the SVG's own default text
            greys = {c for c in colours if c[1:3] == c[3:5] == c[5:7]}
            assert colours == greys, colours - greys  # nothing but greys on screen

    asyncio.run(scenario())


def test_the_dashboard_tail_leaves_answered_requests_to_the_log_screen_which_hides_rigctl_polls_until_o(
    serve_ctx: ServeContext,
) -> None:
    """Under load an access line a request buries vLLM's own words in a 20-line tail: the tail keeps
    what vLLM says and the requests it refused; the log screen has every line."""
    assert transaction.switch(serve_ctx, "good").status == "switched"
    record = present(read_record(), "the record")
    model = record.served_names[0]
    app = app_for(serve_ctx)
    answered, refused = '"POST /v1/completions HTTP/1.1" 200', '"POST /v1/completions HTTP/1.1" 404'

    async def lines_of(tail_id: str, pilot: Pilot[None], want: str) -> list[str]:
        for _ in range(60):
            await pilot.pause(0.05)
            lines = list(app.screen.query_one(f"#{tail_id}", LogTail).view.lines)
            if any(want in line for line in lines):
                return lines
        return lines

    async def scenario() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            await poll(app, pilot)  # rigctl's own GET /metrics, /health, /v1/models reach the log
            async with httpx.AsyncClient(base_url=record.base_url, timeout=60) as client:
                done = await client.post("/v1/completions", json={"model": model, "prompt": "hi", "max_tokens": 2})
                assert done.status_code == 200
                assert (await client.post("/v1/completions", json={"model": "nope", "prompt": "hi"})).status_code == 404
            await poll(app, pilot)
            tail = await lines_of("dashboard-log", pilot, refused)
            assert any("Application startup complete" in line for line in tail)
            assert any(refused in line for line in tail)
            assert not any(answered in line or '"GET /metrics HTTP/1.1" 200' in line for line in tail)
            title = str(app.screen.query_one("#dashboard-log .log-title", Static).content)
            assert title.endswith("(answered requests: l)")
            await pilot.press("l")
            full = await lines_of("log-screen-tail", pilot, answered)
            assert any("Application startup complete" in line for line in full)
            assert any(answered in line for line in full) and any(refused in line for line in full)
            assert not any('"GET /metrics HTTP/1.1" 200' in line for line in full)
            await pilot.press("o")  # kept all along: shown now
            full = await lines_of("log-screen-tail", pilot, '"GET /metrics HTTP/1.1" 200')
            assert any('"GET /metrics HTTP/1.1" 200' in line for line in full)

    asyncio.run(scenario())


def test_sixteen_colour_terminal_gets_the_ansi_theme_unless_one_is_configured() -> None:
    from rigctl.tui.theme import initial_theme

    assert initial_theme(load_settings(), "standard") == "ansi-dark"  # what Rich says for TERM=xterm
    assert initial_theme(load_settings(), "256") == "textual-dark"
    assert initial_theme(load_settings(), "truecolor") == "textual-dark"
    write_config('[tui]\ntheme = "nord"\n')
    assert initial_theme(load_settings(), "standard") == "nord"  # the owner's choice wins


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_the_footer_keeps_quit_on_every_screen(isolated_dirs: Path, size: tuple[int, int]) -> None:
    from rigctl.sim.rig import SimulatedBackend
    from rigctl.tui.app import SCREENS
    from tests.tui.helpers import settle, wait_for

    app = make_app(RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"))), poll_interval=None)

    async def scenario() -> None:
        async with app.run_test(size=size) as pilot:
            for name in SCREENS:
                app.go(name)
                await settle(app, pilot)

                def footer() -> str:
                    return screen_text(app).splitlines()[-1]

                # drawn once the screen is up (a loaded machine takes a moment): then q must be on it
                await wait_for(pilot, f"the footer of {name}", lambda: "? Help" in footer())
                assert "q Quit" in footer(), (name, footer())

    asyncio.run(scenario())
