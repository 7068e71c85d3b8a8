"""Fault 15: in the TUI, GPU freshness waited on HTTP. Against an endpoint that accepts and
never answers, every tick blocked for the scrape's timeout, so the GPU cards went stale exactly
when vLLM was stuck. The monitor samples the GPUs on their own cadence; an engine poll still in
flight is skipped, not stacked."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import psutil

from rigctl.backends import open_backend
from rigctl.config import load_settings
from rigctl.gpu.sampler import RigSampler
from rigctl.monitor import Monitor
from rigctl.tui.app import make_app
from rigctl.tui.messages import Polled
from tests.support import present
from tests.support.bad_servers import BadServer, bad_server
from tests.tui.helpers import Seen


def _record_pointing_at(server: BadServer) -> None:
    state = Path(os.environ["XDG_STATE_HOME"]) / "rigctl"
    state.mkdir(parents=True, exist_ok=True)
    me = psutil.Process()
    (state / "server.json").write_text(
        json.dumps(
            {
                "launcher": "process",
                "profile": "wedged",
                "started": time.time(),
                "log_path": "",
                "host": "127.0.0.1",
                "port": server.port,
                "served_names": ["m"],
                "argv": ["vllm", "serve", "m"],
                "pid": me.pid,
                "create_time": me.create_time(),
            }
        )
    )


def test_the_gpus_keep_their_cadence_while_the_engine_never_answers() -> None:
    with bad_server("silent") as server:
        _record_pointing_at(server)
        monitor = Monitor(RigSampler(open_backend("2x3090-nvlink")), load_settings())
        try:
            stamps, took, engines = [], [], 0
            for _ in range(8):
                started = time.monotonic()
                tick = monitor.tick(engine_due=True)
                took.append(time.monotonic() - started)
                stamps.append(present(tick.rig).timestamp)
                engines += tick.engine is not None
                time.sleep(0.25)
            # a GPU sample every tick, and ticks that came back while the wedged scrape still hung:
            # the GPUs never wait on the engine (were they to, every tick would carry its outcome)
            assert stamps == sorted(stamps) and len(set(stamps)) == 8
            assert engines < 8, (engines, took)
            # one poll at a time: a wedged scrape is abandoned at its timeout (0.8 s), then the next
            assert server.connections <= 2 * 4 // 0.8 + 2, server.connections
        finally:
            monitor.close()


def test_the_dashboard_repaints_the_gpus_every_tick_while_the_engine_is_wedged() -> None:
    asyncio.run(_dashboard_while_wedged())


async def _dashboard_while_wedged() -> None:
    with bad_server("silent") as server:
        _record_pointing_at(server)
        app = make_app(RigSampler(open_backend("2x3090-nvlink")), poll_interval=0.3)
        seen = Seen()
        async with app.run_test(size=(120, 40), message_hook=seen) as pilot:
            await pilot.pause(3.0)
        repaints = [m.rig.timestamp for m in seen.messages if isinstance(m, Polled) and m.rig is not None]
        # every scrape of the silent server hangs until its timeout; were the GPU cards to wait on
        # it, there would be at most one repaint per scrape: there are more, whatever the machine's speed
        assert len(set(repaints)) > server.connections + 1, (repaints, server.connections)
