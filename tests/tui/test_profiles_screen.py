"""The Profiles screen at 80x24 and 160x48."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from rigctl.gpu.sampler import RigSampler
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import load_rig
from rigctl.state.statefiles import ActiveState, write_state
from rigctl.tui.app import RigApp, make_app
from rigctl.tui.screens.profiles import ProfilesScreen
from tests.tui.helpers import poll, settle


def app_on(rig: str) -> RigApp:
    return make_app(RigSampler(SimulatedBackend(load_rig(rig))), poll_interval=None)


async def profiles_table(app: RigApp, pilot: Pilot[None]) -> DataTable[str]:
    """The profiles screen, opened with its key (once the app is live and its first poll is in) and
    loaded: its table."""
    await settle(app, pilot)
    await pilot.press("p")
    await settle(app, pilot)
    table: DataTable[str] = app.screen.query_one(DataTable)
    return table


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_profiles_screen_lists_marks_active_and_diffs(size: tuple[int, int], isolated_dirs: Path) -> None:
    write_state(ActiveState(profile="qwen36-27b-awq-tp2", last_good="qwen36-27b-awq-tp2", status="serving", since=time.time()))
    app = app_on("2x3090-nvlink")

    async def scenario() -> None:
        async with app.run_test(size=size) as pilot:
            await poll(app, pilot)
            await pilot.press("p")
            await settle(app, pilot)
            table = app.screen.query_one(DataTable)
            assert table.row_count == 9
            assert table.virtual_size.width <= table.size.width  # every column on screen, none behind a scrollbar
            screen = app.screen
            assert isinstance(screen, ProfilesScreen)
            assert ("kv" in screen.columns) == (size[0] >= 100)
            names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert "● qwen36-27b-awq-tp2" in names
            row = names.index("  qwen36-27b-awq-tp2-async")
            table.move_cursor(row=row)
            await pilot.pause()
            detail = str(app.screen.query_one("#profile-detail", Static).content)
            assert "against the active profile (qwen36-27b-awq-tp2):" in detail
            assert "--async-scheduling: (unset) -> (set)" in detail
            await pilot.press("d")
            assert app.screen.id == "dashboard"

    asyncio.run(scenario())


def test_invalid_profile_shows_its_errors_inline(isolated_dirs: Path) -> None:
    user = isolated_dirs / "config" / "rigctl" / "profiles"
    user.mkdir(parents=True)
    (user / "aaa-broken.toml").write_text('extends = "qwen36-27b-awq-tp2"\n[vllm]\nmax_num_seq = 8\n')
    app = app_on("2x3090-nvlink")

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            table = await profiles_table(app, pilot)
            assert list(table.get_row_at(0))[:2] == ["  aaa-broken", "INVALID"]
            detail = str(app.screen.query_one("#profile-detail", Static).content)
            assert "aaa-broken.toml:3: max_num_seq: not a vllm serve option; did you mean max_num_seqs?" in detail

    asyncio.run(scenario())


def test_the_detail_shows_the_predicted_pool_beside_the_last_measured_one(
    isolated_dirs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from tests.fit.test_fit_cli import cache_model

    hub = isolated_dirs / "hub"
    cache_model(hub, "Qwen/Qwen3.6-27B-AWQ")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    state = isolated_dirs / "state" / "rigctl"
    state.mkdir(parents=True, exist_ok=True)
    record = {
        "profile": "qwen36-27b-4090-tp2-mtp",
        "profile_hash": "x",
        "when": 1_790_000_000.0,
        "argv": [],
        "vllm_version": "0.33.0",
        "rig": "sim:2x4090-pcie",
        "kv_tokens": 350_518,
        "max_concurrency": 10.7,
        "max_model_len": 32768,
        "available_kv_gib": 9.99,
        "model_load_gib": None,
        "model_load_seconds": None,
        "graph_capture_seconds": None,
        "boot_seconds": 100.0,
    }
    (state / "history.jsonl").write_text(json.dumps(record) + "\n")
    app = app_on("2x4090-pcie")

    async def scenario() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            await poll(app, pilot)
            await pilot.press("p")
            await settle(app, pilot)
            table = app.screen.query_one(DataTable)
            names = [str(table.get_row_at(i)[0]).strip() for i in range(table.row_count)]
            for name, expect in (
                ("qwen36-27b-4090-tp2-mtp", "measured 350,518 tokens (10.70x)"),
                ("qwen36-27b-4090-dp2", "measured: no boot of it on this rig yet"),
            ):
                table.move_cursor(row=names.index(name))
                await pilot.pause()
                detail = str(app.screen.query_one("#profile-detail", Static).content)
                assert "KV pool: predicted " in detail and expect in detail, detail
            detail = str(app.screen.query_one("#profile-detail", Static).content)
            assert "the fit rule would split this model" in detail  # the DP lint, inline

    asyncio.run(scenario())


def test_the_active_mark_follows_what_serves_not_the_screens_first_read(isolated_dirs: Path) -> None:
    """The state file said `qwen36-27b-awq-tp2` served when the screen was read; the next poll
    finds nothing answering (verified, as status does): the ● goes, without a reload."""
    write_state(ActiveState(profile="qwen36-27b-awq-tp2", last_good="qwen36-27b-awq-tp2", status="serving", since=time.time()))
    app = app_on("2x3090-nvlink")

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            table = await profiles_table(app, pilot)
            assert "● qwen36-27b-awq-tp2" in [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            await poll(app, pilot)
            names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert "  qwen36-27b-awq-tp2" in names and not any(name.startswith("●") for name in names), names

    asyncio.run(scenario())
