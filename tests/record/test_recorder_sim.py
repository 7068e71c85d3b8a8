"""The recorder through `rigctl record` as a subprocess, against the simulator under its load
generator: rows per profile and boot, the report table from them, a switch that collapses the
hit rate flagged (report and status), one writer at a time, and a SIGKILL mid-write that leaves
the file whole."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigctl.sim.loadgen import LoadGenerator
from tests.faults.rig import Rig

FAST = {"RIGCTL_SIM_SPEED": "4"}


class RecordRig(Rig):
    def __init__(self, home: Path) -> None:
        super().__init__(home)
        self.env.update(FAST)
        # the thresholds are days of traffic on a real rig; these runs are seconds of it
        self.write_config("[server]\nstop_grace = 3\nkill_wait = 2\n[record]\nwarmup_s = 0\nmin_prefix_queries = 1000\n")
        self.add_profile("nocache", "enable_prefix_caching = false\n")
        self.load = LoadGenerator(self.endpoint, users=4, seed=3)

    def endpoint(self) -> tuple[str, str] | None:
        """What serves now, or None between a switch's stop and its new server's record (the load's
        users wait then, as an owner's apps would retry)."""
        record = self.record_if_any()
        return (f"http://127.0.0.1:{record['port']}", "qwen3.6-27b") if record else None

    def recorder(self, *args: str) -> subprocess.Popen[str]:
        return self.popen("record", "--interval", "1", *args)

    @property
    def db(self) -> Path:
        return self.state_dir / "record.sqlite"


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[RecordRig]:
    harness = RecordRig(tmp_path / "home")
    yield harness
    harness.load.stop()
    harness.cleanup()


def wait_rows(rig: RecordRig, profile: str, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if rig.db.is_file():
            with sqlite3.connect(rig.db) as db:
                (n,) = db.execute("SELECT count(*) FROM samples WHERE profile = ? AND prefix_queries > 0", (profile,)).fetchone()
            if n >= count:
                return
        time.sleep(0.5)
    raise AssertionError(f"fewer than {count} rows with traffic for {profile}")


def test_two_profiles_recorded_compared_and_a_hit_rate_collapse_flagged(rig: RecordRig) -> None:
    assert rig.rigctl("start", "good").returncode == 0
    rig.load.start()
    recorder = rig.recorder()
    try:
        rig.wait_for(recorder, "recording to")
        wait_rows(rig, "good", 6)
        busy = rig.recorder()  # a second service says so and exits
        assert busy.wait(30) == 1
        assert "another rigctl watch (pid " in (busy.stdout.read() if busy.stdout else "")
        assert rig.rigctl("switch", "nocache").returncode == 0
        wait_rows(rig, "nocache", 6)
    finally:
        recorder.send_signal(signal.SIGTERM)
        code, out = rig.finish(recorder)
    assert code == 0 and "rows written" in out
    done = rig.rigctl("report", "good", "nocache", "--json")
    assert done.returncode == 0, done.stderr
    good, nocache = json.loads(done.stdout)["profiles"]
    history = json.loads(rig.rigctl("history", "--json").stdout)
    assert good["profile"] == "good" and good["pool_tokens"] == history[0]["kv_tokens"]
    # the demo's shared prefix hits in whole blocks: 1,568 tokens each for the 27B at TP2 (the attention
    # page grown to hold a GDN state), so about half its prompt tokens, never all
    assert good["requests"] > 0 and good["prefix_hit_rate"] > 0.3 and good["cold_cache"] is False
    assert 0 < good["peak_resident_tokens"] <= good["pool_tokens"] and good["hours_served"] > 0
    assert good["ttft_mean_s"] > 0 and good["tpot_mean_s"] > 0 and good["e2e_p95_s"] >= good["e2e_mean_s"] * 0.5
    assert nocache["prefix_hit_rate"] == 0 and nocache["regression"]["previous"] == "good"
    assert nocache["regression"]["points"] == pytest.approx(good["prefix_hit_rate"], abs=0.05)  # all of it lost
    text = rig.rigctl("report", "good", "nocache").stdout
    assert "prefix hit rate" in text and "◀ FELL" in text and "warning: prefix hit rate fell from " in text
    status = rig.rigctl("status").stdout
    assert "prefix hit rate fell from " in status
    rig.check_invariants()


def test_sigkill_mid_write_leaves_the_record_whole_and_a_new_recorder_carries_on(rig: RecordRig) -> None:
    assert rig.rigctl("start", "good").returncode == 0
    rig.load.start()
    first = rig.recorder()
    rig.wait_for(first, "recording to")
    wait_rows(rig, "good", 3)
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    with sqlite3.connect(rig.db) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        (before,) = db.execute("SELECT count(*) FROM samples").fetchone()
    second = rig.recorder()  # the lock died with the first
    rig.wait_for(second, "recording to")
    wait_rows(rig, "good", before + 2)
    second.send_signal(signal.SIGTERM)
    assert rig.finish(second)[0] == 0
    done = rig.rigctl("report", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["profiles"][0]["requests"] > 0
