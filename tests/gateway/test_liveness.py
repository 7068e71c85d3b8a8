"""A dead front door is seen and brought back: with vLLM behind it on its internal port, a killed
door is said by `status`, `status --check` (degraded, its own line), the exporter and its alert
rule, and `rigctl watch` starts it again with the words it was started with; a door systemd runs
is left to systemd."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.support.door_rig import DoorRig
from tests.support.waiting import wait_until


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[DoorRig]:
    harness = DoorRig(tmp_path / "home")
    yield harness
    door = harness.read_json(harness.state_dir / "gateway.json")
    if door and psutil.pid_exists(door["pid"]):  # a door `rigctl watch` started, in a session of its own
        os.kill(door["pid"], signal.SIGKILL)
    harness.cleanup()


def kill_door(rig: DoorRig) -> None:
    assert rig.door is not None
    rig.door.kill()
    rig.door.wait(30)
    rig.door = None


def test_a_dead_door_is_said_by_status_check_and_the_exporter(rig: DoorRig) -> None:
    rig.open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    listen = f"127.0.0.1:{rig.port}"
    assert rig.record()["front_door"] == listen  # vLLM sits behind it
    up = rig.status()
    assert up["front_door"]["up"] is True and up["front_door"]["listen"] == listen, up["front_door"]
    kill_door(rig)

    status = rig.status()
    assert status["active_profile"] == "good"  # the engine itself serves...
    assert status["front_door"] == {"listen": listen, "up": False}, status["front_door"]
    assert f"the front door on {listen} is gone: the apps are refused" in status["summary"], status[
        "summary"
    ]  # ...the apps get nothing
    check = rig.rigctl("status", "--check", "--window", "0.5")
    assert check.returncode == 8, check.stdout + check.stderr
    assert check.stdout.startswith(f"degraded: the front door on {listen} is gone"), check.stdout
    scrape = rig.rigctl("exporter", "--once", "--rig", "box1").stdout
    assert f'rigctl_front_door_up{{listen="{listen}",rig="box1"}} 0.0' in scrape, scrape
    rules = json.loads(rig.rigctl("exporter", "--rules").stdout)
    assert any(
        r["alert"] == "RigctlFrontDoorDown" and "rigctl_front_door_up == 0" in r["expr"] for r in rules["groups"][0]["rules"]
    )

    rig.open_door()  # back: healthy again
    assert rig.rigctl("status", "--check", "--window", "0.5").returncode == 0
    scrape = rig.rigctl("exporter", "--once", "--rig", "box1").stdout
    assert f'rigctl_front_door_up{{listen="{listen}",rig="box1"}} 1.0' in scrape, scrape


def test_watch_brings_a_killed_door_back_while_apps_keep_asking(rig: DoorRig) -> None:
    rig.open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    first = rig.read_json(rig.state_dir / "gateway.json")
    assert first is not None and first["argv"][0] == "gateway" and first["systemd"] is False, first
    watch = rig.popen("watch", "--interval", "1")
    try:
        wait_until("the service watching", lambda: (rig.state_dir / "alerts.json").is_file(), watch)
        kill_door(rig)
        rig.wait_for(watch, "front door down")
        said = rig.wait_for(watch, "front door back")
        assert "brought back by rigctl watch" in said[-1], said
        again = rig.read_json(rig.state_dir / "gateway.json")
        assert again is not None and again["pid"] != first["pid"] and again["argv"] == first["argv"], again
        assert rig.serves()  # the apps' address answers, through the new door
        assert rig.status()["front_door"]["up"] is True
    finally:
        watch.send_signal(signal.SIGTERM)
        rig.finish(watch)


def test_a_door_systemd_runs_is_left_to_systemd(rig: DoorRig) -> None:
    rig.open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    kill_door(rig)
    door = rig.read_json(rig.state_dir / "gateway.json")
    assert door is not None
    (rig.state_dir / "gateway.json").write_text(json.dumps({**door, "systemd": True}))  # as a unit's door writes it
    watch = rig.popen("watch", "--interval", "1")
    try:
        said = rig.wait_for(watch, "front door down")
        assert "systemd runs it: its unit brings it back" in said[-1], said
        # a door the service starts is started in the look that says it down, before it says so
        assert doors_of(rig) == [], doors_of(rig)
    finally:
        watch.send_signal(signal.SIGTERM)
        rig.finish(watch)


def doors_of(rig: DoorRig) -> list[int]:
    """The `rigctl gateway` processes of this rig (its state dir in their environment)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if "gateway" in proc.cmdline() and proc.environ().get("XDG_STATE_HOME") == rig.env["XDG_STATE_HOME"]:
                found.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found
