"""Two snapshots of the dashboard (pytest-textual-snapshot; SVGs under __snapshots__), kept few
and stable: a fixed simulated rig with no load, a frozen clock, no host figures, no timers.
After an intended change of the look: pytest tests/tui/test_snapshots.py --snapshot-update."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rigctl.gpu.sampler import RigSampler
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import load_rig
from rigctl.tui.app import make_app
from tests.tui.helpers import poll, settle

FROZEN = 1_764_000_000.0  # a fixed instant: idle drift and sparklines depend on the clock


def frozen_app(rig: str, claims: Path) -> Any:
    backend = SimulatedBackend(load_rig(rig), claims_dir=claims, clock=lambda: FROZEN)
    return make_app(RigSampler(backend, with_host=False, clock=lambda: FROZEN), poll_interval=None)


@pytest.mark.parametrize(
    ("rig", "size"), [("2x3090-gen3-x8", (80, 24)), ("2x4090-pcie", (160, 48))], ids=["3090-gen3-80x24", "4090-160x48"]
)
def test_dashboard_snapshot(snap_compare: Any, tmp_path: Path, rig: str, size: tuple[int, int]) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot.app, pilot)  # the tick started on mount, then exactly one more
        await poll(pilot.app, pilot)

    assert snap_compare(frozen_app(rig, tmp_path), terminal_size=size, run_before=run_before)


def test_trends_snapshot(snap_compare: Any, tmp_path: Path, isolated_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fixed week of record (tests/record/test_trends.py) at a frozen instant, in UTC."""
    import time

    from rigctl.record.store import RecordWriter
    from tests.record.test_trends import NOW, week

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    writer = RecordWriter()
    week(writer)
    writer.close()
    app = frozen_app("2x3090-nvlink", tmp_path)
    app.trends.clock = lambda: NOW

    async def run_before(pilot: Any) -> None:
        await settle(pilot.app, pilot)
        await pilot.press("g", "3")
        await settle(pilot.app, pilot)

    try:
        assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
    finally:
        monkeypatch.undo()
        time.tzset()
