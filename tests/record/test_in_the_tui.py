"""The record in the TUI: the History screen's served tab shows the report from the record, and
the background recorder notifies once when a switch collapsed the hit rate; it stands aside
when a headless recorder writes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import Static, TabbedContent

from rigctl.config import load_settings
from rigctl.observe.pipeline import LivePipeline
from rigctl.record.reader import RecordReader
from rigctl.record.store import RecorderBusy, RecordWriter
from tests.record.test_derive import row
from tests.tui.helpers import Seen, settle
from tests.tui.test_profiles_screen import app_on


def fill(writer: RecordWriter, now: float) -> list:  # type: ignore[type-arg]
    rows = [row(now - 3000 + 10 * i, "good", "b1", 10_000, 9_700, usage=0.5, requests=3) for i in range(100)]
    rows += [row(now - 1000 + 10 * i, "nocache", "b2", 10_000, 500, usage=0.4, requests=3) for i in range(40)]
    for r in rows:
        writer.add(r)
    return rows


def test_the_history_screen_has_a_served_tab_with_the_report(isolated_dirs: Path) -> None:
    import time

    writer = RecordWriter()
    fill(writer, time.time())
    writer.close()
    app = app_on("2x3090-nvlink")

    async def scenario() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("h")
            await settle(app, pilot)
            app.screen.query_one(TabbedContent).active = "served"
            await settle(app, pilot)
            text = str(app.screen.query_one("#served-report", Static).content)
            assert "good" in text and "nocache" in text and "prefix hit rate" in text and "97.0%" in text
            assert "◀ FELL" in text and "warning: prefix hit rate fell from 97.0% (good) to 5.0% (nocache)" in text

    asyncio.run(scenario())


def test_the_live_pipeline_judges_a_regression_once_per_boot_and_stands_aside_for_another(
    isolated_dirs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TUI's pipeline: a row whose boot collapsed the hit rate is an alert at the next tick's
    judgement, once; a second TUI's keeper waits for the record rather than failing, and takes it
    when the first lets go."""
    import time

    import rigctl.record.regression_watch as regression_watch

    monkeypatch.setattr(regression_watch, "CHECK_EVERY_S", 0.0)
    pipeline = LivePipeline(None, load_settings(), lambda text: None, service=False)
    assert pipeline.start_record() is None and pipeline.keeper.recording
    assert pipeline.keeper.writer is not None
    rows = fill(pipeline.keeper.writer, time.time())
    pipeline.keeper.on_row(rows[-1])
    pipeline.keeper.on_row(rows[-1])  # judged: said once
    changes = pipeline.judge()
    assert [c.alert.kind for c in changes] == ["hit-rate"] and changes[0].state == "fired", changes
    assert "fell from 97.0% (good) to 5.0% (nocache)" in changes[0].alert.text
    assert pipeline.judge() == []
    second = LivePipeline(None, load_settings(), lambda text: None, service=False)
    assert second.start_record() is None and not second.keeper.recording  # it waits, it does not fail
    assert second.keeper.busy_note and "another recorder (pid " in second.keeper.busy_note
    pipeline.close()
    deadline = time.monotonic() + 30
    while not second.keeper.recording and time.monotonic() < deadline:  # the first let go: it takes the record
        time.sleep(0.1)
    assert second.keeper.recording and second.keeper.busy_note is None
    second.close()


def test_the_app_records_while_it_runs_and_lets_go_when_it_quits(isolated_dirs: Path) -> None:
    from rigctl.gpu.sampler import RigSampler
    from rigctl.sim.rig import SimulatedBackend
    from rigctl.sim.rigspec import load_rig
    from rigctl.tui.app import make_app

    app = make_app(RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"))), poll_interval=None, record=True)

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert app.pipeline.keeper.recording and app.pipeline.keeper.busy_note is None
            with pytest.raises(RecorderBusy, match="another recorder"):
                RecordWriter()  # the app holds the record

    asyncio.run(scenario())
    RecordWriter().close()  # let go on exit


def test_a_damaged_record_is_said_once_and_the_tui_goes_on(isolated_dirs: Path) -> None:
    from rigctl.gpu.sampler import RigSampler
    from rigctl.sim.rig import SimulatedBackend
    from rigctl.sim.rigspec import load_rig
    from rigctl.tui.app import make_app

    state = isolated_dirs / "state" / "rigctl"
    state.mkdir(parents=True, exist_ok=True)
    (state / "record.sqlite").write_text("not a database\n")
    app = make_app(RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"))), poll_interval=None, record=True)

    seen = Seen()

    async def scenario() -> None:
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await pilot.pause()
            problem = app.pipeline.background.problem if app.pipeline.background else None
            assert problem is not None and "move it away and a new record starts" in problem
            assert seen.notified("the serving record is not kept")
            await pilot.press("d")
            assert app.screen.id == "dashboard"

    asyncio.run(scenario())


def test_in_the_tui_the_dashboards_own_engine_poll_feeds_the_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No scrape of its own: the Monitor's polls of the simulator under load become rows."""
    import sqlite3
    import time

    from rigctl.gpu.sampler import RigSampler
    from rigctl.sim.rig import SimulatedBackend
    from rigctl.sim.rigspec import load_rig
    from tests.record.test_recorder_sim import RecordRig

    rig = RecordRig(tmp_path / "home")
    try:
        assert rig.rigctl("start", "good").returncode == 0
        for var in ("XDG_STATE_HOME", "XDG_CONFIG_HOME"):
            monkeypatch.setenv(var, rig.env[var])
        rig.write_config("[record]\ninterval = 1\n")
        settings = load_settings()
        pipeline = LivePipeline(RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"))), settings, lambda text: None, service=False)
        assert pipeline.start_record() is None
        monitor = pipeline.monitor
        rig.load.start()
        deadline = time.monotonic() + 60
        rows = 0
        while time.monotonic() < deadline and rows < 3:
            monitor.tick(engine_due=False)  # the rig sample the energy is read from
            monitor.poll_engine_now()
            time.sleep(0.3)
            with sqlite3.connect(rig.db) as db:
                (rows,) = db.execute("SELECT count(*) FROM samples WHERE profile = 'good'").fetchone()
            db.close()
        pipeline.close()
        assert rows >= 3
        row = RecordReader(rig.db).rows()[-1]
        assert row.pool_tokens and row.kv_usage_max is not None and row.energy_j is not None and row.energy_j > 0
    finally:
        rig.load.stop()
        rig.cleanup()
