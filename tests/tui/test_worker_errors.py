"""No worker error goes unsaid: a loader that raises is a notification naming what failed and a
line (with its traceback) in the TUI's error log, never an empty table that says nothing."""

from __future__ import annotations

import ast
import asyncio
import importlib
from pathlib import Path

from textual.widgets import DataTable

from rigctl.gpu.sampler import RigSampler
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import load_rig
from rigctl.state.boots import boots_file
from rigctl.tui.app import make_app
from rigctl.tui.worker_errors import SaysWorkerErrors, error_log_path
from tests.tui.helpers import Seen, settle

TUI = Path(__file__).resolve().parents[2] / "rigctl" / "tui"


def test_a_history_that_cannot_be_read_is_said_not_an_empty_table() -> None:
    boots = boots_file()
    boots.mkdir(parents=True)  # where the file should be: reading it fails as a damaged file does
    seen = Seen()

    async def scenario() -> None:
        app = make_app(RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"))), poll_interval=None)
        async with app.run_test(size=(80, 24), message_hook=seen) as pilot:
            await settle(app, pilot)
            app.go("history")
            await settle(app, pilot)
            assert app.screen.query_one("#history-table", DataTable).row_count == 0

    asyncio.run(scenario())
    said = [n.message for n in seen.notifications if "Reading boot history failed" in n.message]
    assert len(said) == 1, [n.message for n in seen.notifications]
    assert str(boots) in said[0] and f"details: {error_log_path()}" in said[0]
    assert [n.severity for n in seen.notifications if n.message == said[0]] == ["error"]
    log = error_log_path().read_text()
    assert "Reading boot history failed" in log and "Traceback" in log and "DamagedFile" in log


def test_every_node_that_starts_a_worker_says_its_errors() -> None:
    """Textual posts a worker's state to the node that started it and does not bubble it: each
    class with a `@work` method must carry the handler, or its failures go unsaid."""
    starters: list[str] = []
    for path in sorted(TUI.rglob("*.py")):
        tree = ast.parse(path.read_text())
        module = ".".join(path.relative_to(TUI.parents[1]).with_suffix("").parts)
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            works = [
                f
                for f in node.body
                if isinstance(f, ast.FunctionDef)
                and any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "work" for d in f.decorator_list)
            ]
            if works:
                starters.append(f"{module}.{node.name}")
                cls = getattr(importlib.import_module(module), node.name)
                assert issubclass(cls, SaysWorkerErrors), f"{module}.{node.name} starts workers and says none of their errors"
    assert len(starters) >= 8, starters  # the app, the screens with loaders, the log tail
