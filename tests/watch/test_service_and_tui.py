"""The guide's systemd unit (docs/guide/record-and-watch.md) beside a TUI: the service started the way the unit starts it takes the
record from an open TUI (which stands aside, no exit 1 into systemd's start limit), is restarted
under it, and for a minute the two run together with one writer and no interval lost."""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rigctl.gpu.sampler import RigSampler
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import load_rig
from tests.watch.harness import WatchRig

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "record-and-watch.md"


def unit(home: Path) -> dict[str, str]:
    """The guide's rigctl-watch.service as its block writes it (run as written, in `home`: the
    unit names rigctl where pip put it), its [Service] keys."""
    block = re.search(r"```sh\n(# the unit names rigctl.*?rigctl-watch.service <<EOF\n.*?\nEOF\n)", GUIDE.read_text(), re.S)
    assert block, "the guide writes the watch service's unit"
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"  # this install's rigctl first, as pip's PATH has it
    done = subprocess.run(["bash", "-c", block.group(1)], env={**os.environ, "HOME": str(home), "PATH": path}, timeout=30)
    assert done.returncode == 0
    text = (home / ".config" / "systemd" / "user" / "rigctl-watch.service").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def exec_start(keys: dict[str, str]) -> list[str]:
    """ExecStart as systemd runs it: the console script pip installed, never a guessed path."""
    argv = shlex.split(keys["ExecStart"])
    assert argv[0] == str(Path(sys.executable).parent / "rigctl") and os.access(argv[0], os.X_OK), argv
    return argv


def rows(db: Path) -> list[tuple[float, float, str]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT ts, seconds, boot FROM samples ORDER BY ts"))


def test_the_units_exec_start_is_a_service_that_never_fails_for_a_tui(tmp_path: Path) -> None:
    keys = unit(tmp_path)
    assert keys["Restart"] == "on-failure" and exec_start(keys)[1:] == ["watch"]


@pytest.mark.slow
def test_the_service_and_the_tui_together_for_a_minute_one_writer_nothing_lost(watch_rig: WatchRig) -> None:
    from rigctl.tui.app import make_app

    rig = watch_rig
    rig.configure()
    rig.config.write_text(rig.config.read_text() + "[record]\ninterval = 1\n")
    assert rig.rigctl("switch", "good").returncode == 0
    argv = exec_start(unit(rig.home / "unit-home"))
    db = rig.state_dir / "record.sqlite"
    lock = rig.state_dir / "record.lock"  # RecordWriter writes its pid there
    app = make_app(RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"))), poll_interval=0.5, record=True)
    services: list[subprocess.Popen[str]] = []

    def start_service() -> subprocess.Popen[str]:
        proc = subprocess.Popen(argv, env=rig.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        services.append(proc)
        rig.watchers.append(proc)
        return proc

    async def until(what: str, check: Callable[[], bool], within: float = 30) -> None:
        deadline = time.monotonic() + within
        while not check():
            assert time.monotonic() < deadline, f"no {what} within {within} s"
            for proc in services:
                assert proc.poll() is None or proc.returncode == 0, f"the service exited {proc.returncode}"
            await asyncio.sleep(0.2)

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            recorder = app.pipeline.keeper
            await until("the TUI recording alone", lambda: recorder.recording)
            await until("a row from the TUI", lambda: db.is_file() and len(rows(db)) >= 2)
            first = start_service()  # systemctl --user start rigctl-watch, under the open TUI
            await until("the TUI standing aside", lambda: not recorder.recording)
            await pilot.pause(3)
            assert first.poll() is None  # no exit 1 into systemd's start limit
            first.send_signal(signal.SIGTERM)  # systemctl --user restart rigctl-watch
            out, _ = first.communicate(timeout=60)
            assert first.returncode == 0 and "recording to" in out and "Traceback" not in out, out
            await until("the TUI taking the record back", lambda: recorder.recording)
            second = start_service()
            await until("the TUI standing aside again", lambda: not recorder.recording)
            await until("the service holding the record", lambda: lock.read_text().strip() == str(second.pid))
            began = time.monotonic()
            while time.monotonic() - began < 60:  # a minute together
                assert second.poll() is None, second.stdout.read() if second.stdout else ""
                # one writer: the service holds the record's lock (an flock: exclusive), the TUI does not record
                assert not recorder.recording and lock.read_text().strip() == str(second.pid)
                await pilot.pause(1)
            second.send_signal(signal.SIGTERM)
            out, _ = second.communicate(timeout=60)
            assert second.returncode == 0 and "Traceback" not in out, out

    asyncio.run(scenario())
    written = rows(db)
    assert written[-1][0] - written[0][0] >= 60  # the minute together, and the handovers before it
    for (ts0, _, boot0), (ts1, seconds1, boot1) in itertools.pairwise(written):
        assert boot0 == boot1
        # nothing lost: no gap between rows beyond what a handover takes (a row's start is its end
        # scrape's time less its monotonic seconds: a loaded machine skews it, never by a gap)
        assert ts1 - seconds1 - ts0 < 5, (ts0, ts1, seconds1)
