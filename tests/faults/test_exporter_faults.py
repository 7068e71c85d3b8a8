"""rigctl exporter and rigctl rigs under faults, through the CLI: state files broken mid-run (the
exporter keeps answering every scrape, no traceback), a state dir that is a symlink, a SIGKILL,
and a Prometheus that answers garbage, HTML, nothing at all, or trickles (one line each)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.faults.rig import Rig, crashed
from tests.support.bad_servers import bad_server
from tests.support.serving import free_port
from tests.support.waiting import wait_until


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    rig = Rig(tmp_path / "home")
    yield rig
    rig.rigctl("stop", "--no-drain")


def _scrape(port: int) -> httpx.Response | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    except httpx.TransportError:
        return None


def test_state_files_broken_mid_run_never_stop_a_scrape(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    port = free_port()
    proc = rig.popen("exporter", "--listen", f"127.0.0.1:{port}", "--rig", "box")
    try:
        rig.wait_for(proc, "serving rig")
        assert "rigctl_serving_up" in wait_until("a first scrape", lambda: _scrape(port), proc).text
        for name in ("server.json", "active.json", "alerts.json"):
            (rig.state_dir / name).write_text('{"launcher": ')
        with (rig.state_dir / "history.jsonl").open("a") as history:
            history.write("{not json\n")
        for _ in range(3):
            answer = _scrape(port)
            assert answer is not None and answer.status_code == 200 and "rigctl_gpu_memory_total_bytes{" in answer.text
        proc.send_signal(signal.SIGTERM)
        code, out = rig.finish(proc)
        assert code == 0 and not crashed(out) and "Traceback" not in out
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_sigkill_leaves_nothing_behind_to_refuse_the_next(rig: Rig) -> None:
    port = free_port()
    proc = rig.popen("exporter", "--listen", f"127.0.0.1:{port}")
    rig.wait_for(proc, "serving rig")
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    again = rig.popen("exporter", "--listen", f"127.0.0.1:{port}")  # the port is free again, nothing to clean
    try:
        rig.wait_for(again, "serving rig")
        assert wait_until("a scrape", lambda: _scrape(port), again).status_code == 200
    finally:
        again.send_signal(signal.SIGTERM)
        rig.finish(again)


def test_a_state_dir_that_is_a_symlink_is_read_as_status_reads_it(rig: Rig, tmp_path: Path) -> None:
    """The exporter writes nothing: like `rigctl status` it reads through the link (the commands
    that write refuse it; tests/faults/test_state_files.py)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rig.state_dir.parent.mkdir(parents=True, exist_ok=True)
    if rig.state_dir.exists():
        rig.state_dir.rename(tmp_path / "moved")
    rig.state_dir.symlink_to(elsewhere)
    done = rig.rigctl("exporter", "--once")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "rigctl_gpu_memory_total_bytes{" in done.stdout and "rigctl_serving_up{" in done.stdout


@pytest.mark.parametrize("behaviour", ["garbage", "html", "empty", "random", "not-vllm"])
def test_a_prometheus_that_answers_nonsense_is_one_line(rig: Rig, behaviour: str) -> None:
    with bad_server(behaviour) as server:
        done = rig.rigctl("rigs", "--prometheus", server.url)
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"rigctl: Prometheus at {server.url}"), line


def test_a_prometheus_that_trickles_is_cut_at_the_configured_timeout(rig: Rig) -> None:
    rig.write_config("[prometheus]\ntimeout = 2\n")
    with bad_server("trickle") as server:
        done = rig.rigctl("rigs", "--prometheus", server.url, timeout=60)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "no complete answer within 2 s" in line or "did not answer" in line, line


def test_silent_connections_never_delay_a_scrape(rig: Rig) -> None:
    """Three connections that send nothing (a port scanner, a stuck probe) stay open while
    Prometheus scrapes: every scrape is answered within its own 10 s timeout; forty more
    connections than the exporter serves at once are closed, never queued before a scrape."""
    port = free_port()
    proc = rig.popen("exporter", "--listen", f"127.0.0.1:{port}", "--rig", "box")
    silent: list[socket.socket] = []
    try:
        rig.wait_for(proc, "serving rig")
        wait_until("a first scrape", lambda: _scrape(port), proc)
        silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        for _ in range(4):
            answer = _scrape(port)
            assert answer is not None and answer.status_code == 200 and 'rig="box"' in answer.text
        silent += [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
        answer = wait_until("a scrape beside 43 silent connections", lambda: _scrape(port), proc)
        assert answer.status_code == 200
        proc.send_signal(signal.SIGTERM)
        code, out = rig.finish(proc)
        assert code == 0 and "Traceback" not in out, out
    finally:
        for conn in silent:
            conn.close()
        if proc.poll() is None:
            proc.kill()


def test_a_rig_label_that_is_not_utf8_is_refused_in_one_line(rig: Rig) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rigctl", "exporter", "--once", "--rig", os.fsdecode(b"box\xff")],
        env=rig.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "--rig 'box\\\\xff': not UTF-8 text" in done.stderr, done.stderr
