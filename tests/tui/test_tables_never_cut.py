"""Every table on every screen at 80x24, 120x40 and 200x60 with a full state (nine profiles, a history of
their boots, several bench runs, the processes of a serving rig): no column hidden past the
right edge, no row wrapped. An owner over SSH in a small tmux pane sees every figure."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static, TabbedContent

from rigctl.bench.rawdir import bench_dir
from rigctl.record.store import RecordWriter
from rigctl.serve import switch as transaction
from rigctl.serve.context import ServeContext
from rigctl.state.boots import BootRecord, append
from rigctl.tui.app import SCREENS
from tests.record.test_derive import row
from tests.support.config_file import write_config
from tests.support.serving import add_profile
from tests.tui.helpers import app_for, poll, settle

NAMES = ["qwen36-27b-awq-tp2-async-mtp3", "fp8-131k", "autoround-dp2", "seqs64-long-ctx", "nocache", "base-eager", "mtp2"]


def full_state(profiles: Path, port: int) -> None:
    write_config("".join(f'[rigs.{n}]\nssh = "owner@{n}.lan"\n' for n in ("box-two", "provider-node-17", "garage")))
    for name in NAMES:
        add_profile(profiles, name, "", port)
    now = time.time()
    for i, name in enumerate(["good", "alt", *NAMES] * 2):
        append(
            BootRecord(
                name,
                f"{i:08x}deadbeef",
                now - 3600 * (20 - i),
                [],
                "0.33.0",
                "2x3090-nvlink",
                123_456,
                12.34,
                131_072,
                18.5,
                14.2,
                41.7,
                12.0,
                187.3,
            )
        )
    writer = RecordWriter()
    for i, name in enumerate(["good", "alt", *NAMES]):  # each served an hour this week
        for j in range(12):
            writer.add(row(now - 86400 + 3600 * i + 300 * j, name, f"boot-{name}", 1000, 600, usage=0.3, seconds=300))
    writer.close()
    for i in range(5):
        run = bench_dir() / f"2026-12-0{i + 1}T09-00-00-compare-{NAMES[i]}"
        run.mkdir(parents=True)
        (run / "run.json").write_text(
            json.dumps(
                {
                    "started": now - 86400 * i,
                    "arms": [["control", "good"], ["candidate", NAMES[i]], ["control", "good"]],
                    "gate": {"metric": "output_tokens_per_s"},
                }
            )
        )
        (run / "verdict.json").write_text(
            json.dumps({"verdict": ["accept", "reject", "inconclusive"][i % 3], "change": 0.123 * (i - 2)})
        )


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)], ids=["80x24", "120x40", "200x60"])
def test_no_table_cuts_a_column_at_any_size(serve_ctx: ServeContext, profiles: Path, port: int, size: tuple[int, int]) -> None:
    full_state(profiles, port)
    assert transaction.switch(serve_ctx, "good").status == "switched"
    app = app_for(serve_ctx)

    async def scenario() -> None:
        async with app.run_test(size=size) as pilot:
            await poll(app, pilot)
            for name in SCREENS:
                app.go(name)
                await settle(app, pilot)
                await poll(app, pilot)
                if name == "history":
                    app.screen.query_one(TabbedContent).active = "served"
                    await settle(app, pilot)
                    report = app.screen.query_one("#served-report", Static)
                    text = str(report.content)
                    assert "more profile(s) served this week" in text or size[0] > 200, text
                    table_lines = text.split("\n\n")[0].splitlines()  # the table, not the notes under it
                    assert max(len(line) for line in table_lines) <= report.content_region.width, text
                    app.screen.query_one(TabbedContent).active = "boots"
                    await settle(app, pilot)
                if name == "rigs":
                    assert app.screen.query_one(DataTable).row_count == 3  # the three [rigs.NAME]
                for table in app.screen.query(DataTable):
                    if not table.display or table.row_count == 0:
                        continue
                    assert table.virtual_size.width <= table.scrollable_content_region.width, (
                        name,
                        table.id,
                        table.virtual_size.width,
                        table.scrollable_content_region.width,
                        [str(c.label) for c in table.columns.values()],
                    )

    asyncio.run(scenario())
