"""SIGTERM ends the long-running commands wherever it lands: `rigctl watch` between its polls and
inside one, `rigctl exporter` with scrapes in flight, `rigctl gateway` with a stream in flight.
Their handlers take no lock (rigctl/signals.py, the gateway's event loop), so each exits, says
its last line and leaves no traceback, every time."""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import httpx
import pytest

from tests.faults.rig import Rig
from tests.support.serving import free_port

DELAYS = (0.0, 0.03, 0.11, 0.27, 0.5)  # after the command said it runs: inside and between its polls


def terminated(rig: Rig, proc: subprocess.Popen[str], delay: float) -> str:
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    code, out = rig.finish(proc, timeout=30)  # a deadlock would outlast this
    assert code == 0, out
    return out


@pytest.mark.parametrize("delay", DELAYS)
def test_sigterm_ends_the_watch_service_wherever_it_lands(rig: Rig, delay: float) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    proc = rig.popen("watch", "--interval", "0.5")
    rig.wait_for(proc, "watching every")
    assert "stopped:" in terminated(rig, proc, delay)


@pytest.mark.parametrize("delay", DELAYS)
def test_sigterm_ends_the_exporter_with_scrapes_in_flight(rig: Rig, delay: float) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    port = free_port()
    proc = rig.popen("exporter", "--listen", f"127.0.0.1:{port}", "--engine")
    rig.wait_for(proc, "serving rig")
    done = threading.Event()

    def scrape() -> None:
        while not done.is_set():
            try:
                httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
            except httpx.HTTPError:
                return

    scraper = threading.Thread(target=scrape, daemon=True)
    scraper.start()
    try:
        assert "stopped" in terminated(rig, proc, delay)
    finally:
        done.set()
        scraper.join(10)
