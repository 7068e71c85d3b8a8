"""A server rigctl started is found whatever its record says: a valid record that is stale (restored
from a backup, or left by a crash between a start and the record's rewrite) and a wall-clock step
(NTP at boot, a VM's clock correction, a laptop's resume) never orphan it."""

from __future__ import annotations

import json

import pytest

from tests.faults.rig import SERVED, Rig


def test_a_stale_record_restored_from_a_backup_does_not_orphan_the_live_server(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    backup = (rig.state_dir / "server.json").read_text()
    assert rig.rigctl("switch", "alt").returncode == 0
    alt_pid = rig.record()["pid"]
    (rig.state_dir / "server.json").write_text(backup)  # valid, and naming a server that is gone

    status = rig.status()
    assert status["active_profile"] == "alt" and status["server"]["pid"] == alt_pid, status
    assert any("which is not running; found alt running" in n and "boot token" in n for n in status["notes"]), status
    assert rig.record()["pid"] == alt_pid  # the record rebuilt
    rig.check_invariants()

    (rig.state_dir / "server.json").write_text(backup)
    switched = rig.rigctl("switch", "good")  # never "port N is held by pid M (python)": that is rigctl's own
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert "stopping alt" in switched.stdout
    assert rig.serves()[0] == SERVED and rig.status()["active_profile"] == "good"
    rig.check_invariants()

    good_pid = rig.record()["pid"]
    (rig.state_dir / "server.json").write_text(backup)
    stopped = rig.rigctl("stop")
    assert stopped.returncode == 0 and "stopped good" in stopped.stdout, stopped.stdout + stopped.stderr
    assert rig.answering() is None and good_pid not in [p.pid for p in rig.started_servers()]
    rig.check_invariants()


@pytest.mark.parametrize("older_record", [False, True], ids=["with-start-id", "wall-clock-only"])
def test_a_wall_clock_step_does_not_lose_the_server(rig: Rig, older_record: bool) -> None:
    """The record's wall-clock start an hour off is what a clock step does to psutil's create_time
    (boot time from /proc/stat, which a step moves, plus ticks). A record written before start_id
    existed is identified by its boot token instead."""
    assert rig.rigctl("switch", "good").returncode == 0
    path = rig.state_dir / "server.json"
    record = json.loads(path.read_text())
    pid = record["pid"]
    record["create_time"] += 3600
    if older_record:
        record.pop("start_id")
    path.write_text(json.dumps(record))

    status = rig.status()
    assert status["active_profile"] == "good" and status["server"]["pid"] == pid, status
    assert status["server"]["alive"] is True
    assert rig.rigctl("status").stdout.startswith("serving good")
    stopped = rig.rigctl("stop")
    assert stopped.returncode == 0 and "stopped good" in stopped.stdout, stopped.stdout + stopped.stderr
    assert rig.answering() is None
    rig.check_invariants()


def test_a_reused_pid_is_not_taken_for_the_server(rig: Rig) -> None:
    """The other way round: a record naming a live process that is not the server (this test's own
    pid, with the server's boot token) is stale, whatever its wall-clock start says."""
    import os

    import psutil

    assert rig.rigctl("switch", "good").returncode == 0
    path = rig.state_dir / "server.json"
    record = json.loads(path.read_text())
    server = record["pid"]
    record.update(pid=os.getpid(), create_time=psutil.Process().create_time())
    path.write_text(json.dumps(record))
    status = rig.status()
    assert status["active_profile"] == "good" and status["server"]["pid"] == server, status
    assert any(f"named pid {os.getpid()}" in n for n in status["notes"]), status
    rig.check_invariants()
