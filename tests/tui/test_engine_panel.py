"""The engine panel on a live simulator: figures appear, go stale when it stops, recover."""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rigctl.cli import main
from rigctl.cli.context import make_context
from rigctl.serve import switch as transaction
from rigctl.serve.context import ServeContext
from rigctl.state.statefiles import read_record
from rigctl.tui.widgets.engine_panel import EnginePanel
from tests.support import present
from tests.tui.helpers import app_for, poll


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch, profiles: Path) -> Iterator[ServeContext]:
    monkeypatch.setenv("RIGCTL_SIM", "2x3090-nvlink")
    monkeypatch.setenv("RIGCTL_SIM_TIME_SCALE", "0.002")
    monkeypatch.setenv("RIGCTL_SIM_SPEED", "20")
    ctx = make_context(argparse.Namespace(sim="2x3090-nvlink"))
    assert transaction.switch(ctx, "good").status == "switched"
    yield ctx
    transaction.stop(ctx)


def load(url: str, n: int = 4) -> None:
    prompt = "shared agent system prompt " * 400
    threads = [
        threading.Thread(
            target=lambda i=i: httpx.post(
                f"{url}/v1/completions", timeout=60, json={"prompt": prompt + f"task {i}", "max_tokens": 200}
            )
        )
        for i in range(n)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_engine_panel_shows_live_figures_goes_stale_and_recovers(live: ServeContext) -> None:
    app = app_for(live)
    url = present(read_record()).base_url

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await poll(app, pilot)
            await asyncio.to_thread(load, url)
            await poll(app, pilot)
            panel = app.screen.query_one(EnginePanel)
            lines = panel.lines
            assert lines["title"].startswith("qwen3.6-27b · good · max_model_len 131,072")
            assert "of 623,320 tok (4.76x)" in lines["kv"]
            assert "prefix hit" in lines["cache"] and "n/a" not in lines["cache"].split("(life")[0]
            assert "gen n/a" not in lines["load"] and "TTFT p50" in lines["latency"]
            assert "J/tok" in lines["extra"]
            transaction.stop(live)
            await poll(app, pilot)
            assert panel.has_class("-stale") and "DOWN since" in panel.lines["title"]
            assert "of 623,320 tok" in panel.lines["kv"]  # the last values stay, marked stale
            assert transaction.start(live, "good").status == "switched"
            await poll(app, pilot)
            await poll(app, pilot)
            assert not panel.has_class("-stale") and "DOWN" not in panel.lines["title"]

    asyncio.run(scenario())


def test_cli_metrics_live(live: ServeContext, capsys: pytest.CaptureFixture[str]) -> None:
    url = present(read_record()).base_url
    worker = threading.Thread(target=load, args=(url, 3))
    worker.start()
    assert main(["metrics", "--interval", "1.0", "--json"]) == 0
    worker.join()
    data = json.loads(capsys.readouterr().out)
    assert data["snapshot"]["kv_pool_tokens"] == 623_320
    assert data["interval"]["generation_tps"] > 0 and data["interval"]["power_w"] > 0
