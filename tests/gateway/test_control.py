"""The control channel cannot desync, and no control client can leave the door holding: a late
answer is never read as another question's, a switch whose door was slow to answer still cuts the
streams before vLLM stops (each app told why), a hold held forever by another process is
superseded by the next switch, a holder killed mid-hold (or a switch killed mid-boot) leaves 503s
with Retry-After, never a booting server's refused connection, and its ending is a journal line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

from rigctl.gateway.control import ControlError, DoorClient
from tests.support.door_rig import DoorRig
from tests.support.serving import ShortRequests
from tests.support.waiting import wait_until


def door_client(rig: DoorRig) -> DoorClient:
    return DoorClient(rig.state_dir / "gateway.sock")


def held_answers(rig: DoorRig, count: int) -> tuple[list[httpx.Response], list[threading.Thread]]:
    answers: list[httpx.Response] = []

    def ask() -> None:
        body = {"model": "qwen3.6-27b", "prompt": "x", "max_tokens": 2}
        answers.append(httpx.post(f"http://127.0.0.1:{rig.port}/v1/completions", json=body, timeout=60))

    threads = [threading.Thread(target=ask, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    return answers, threads


def wait_held(client: DoorClient, count: int) -> None:
    deadline = time.monotonic() + 30
    while client.status()["held"] < count:
        assert time.monotonic() < deadline, client.status()
        time.sleep(0.05)


def test_a_late_answer_is_never_read_as_the_next_questions(rig: DoorRig) -> None:
    rig.streaming(1)
    with door_client(rig) as client:
        with pytest.raises(ControlError):
            client.ask({"op": "wait", "seconds": 3}, timeout=0.3)  # given up on: its answer comes later
        status = client.status()  # asked on a new connection, answered as itself
        assert status["in_flight"] == 1 and "listen" in status, status
        time.sleep(3)
        assert "listen" in client.status()


def test_a_door_slow_to_answer_still_cuts_the_streams_before_the_stop_and_says_why(rig: DoorRig) -> None:
    """The door stops answering for longer than a wait's timeout (SIGSTOP): the switch says it was
    slow, not gone, cuts its streams once it answers, and the apps' streams end with the reason."""
    longs = rig.streaming(2)
    switch = rig.popen("switch", "alt", "--drain", "4")
    rig.wait_for(switch, "front door holds new requests")
    assert rig.door is not None
    rig.door.send_signal(signal.SIGSTOP)
    time.sleep(7)  # past the first wait's own timeout (its seconds + 5)
    rig.door.send_signal(signal.SIGCONT)
    code, out = rig.finish(switch)
    for request in longs:
        request.join(60)
    assert code == 0, out
    assert "slow to answer" in out and "went away" not in out, out
    assert "2 request(s) through the front door still running after 4 s: cut" in out, out
    for request in longs:
        assert "cut by the switch to alt: the drain's 4 s deadline passed" in request.error, (request.error, request.chunks)
    ending = json.loads(rig.rigctl("history", "--switches", "--json").stdout)[-1]
    assert ending["status"] == "switched" and ending["cut"] == 2 and ending["held"] is not None, ending


def test_a_hold_held_forever_by_another_process_is_superseded_by_the_next_switch(rig: DoorRig) -> None:
    rig.open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    with door_client(rig) as rogue:
        rogue.hold("a stuck script")
        prober = ShortRequests(rig.port)
        prober.start()  # held by the stuck hold until the switch takes it over and releases it
        wait_until("the prober's request held by the stuck hold", lambda: rogue.status()["held"] >= 1)
        assert not prober.answered.is_set()  # held: seen in the door's hold, not by an absence
        switched = rig.rigctl("switch", "alt")
        assert switched.returncode == 0, switched.stdout + switched.stderr
        assert prober.answered.wait(30)
        prober.stop.set()
        prober.join(60)
        assert prober.errors == [], prober.errors
        status = rogue.status()
        assert not status["holding"] and status["last_hold"]["how"] == "released", status
        assert httpx.get(f"http://127.0.0.1:{rig.port}/v1/models", timeout=10).status_code == 200  # not held
        seen = rogue.release()  # late: what its apps saw until the switch took over, never an error
        assert seen.held >= 1 and seen.refused == 0, seen


HOLDER = """
import sys, time
from pathlib import Path
from rigctl.gateway.control import DoorClient
client = DoorClient(Path(sys.argv[1]))
client.hold("a switch about to be killed")
print("holding", flush=True)
time.sleep(600)
"""


def test_a_holder_killed_mid_hold_leaves_503s_with_retry_after_and_no_hold(rig: DoorRig) -> None:
    rig.open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(rig.state_dir / "gateway.sock")], stdout=subprocess.PIPE, text=True, env=rig.env
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        answers, threads = held_answers(rig, 3)
        with door_client(rig) as client:
            wait_held(client, 3)
            holder.kill()
            for thread in threads:
                thread.join(30)
            assert [a.status_code for a in answers] == [503] * 3, [a.text for a in answers]
            assert all(a.headers["retry-after"] for a in answers)
            status = client.status()
            assert not status["holding"] and status["last_hold"]["how"] == "its switch died", status
            assert status["last_hold"]["apps"]["held"] == 3 and status["last_hold"]["apps"]["refused"] == 3
        assert httpx.get(f"http://127.0.0.1:{rig.port}/v1/models", timeout=10).status_code == 200  # the door serves on
    finally:
        holder.kill()
        holder.wait()


def test_a_switch_killed_mid_boot_never_sends_the_apps_to_the_booting_server(rig: DoorRig) -> None:
    """SIGKILL while the new profile boots: what the door held gets 503 + Retry-After, what comes
    while nothing listens gets the same, never a refused connection's 502; the next read of the
    rig writes the killed switch's ending, with what its apps saw."""
    rig.add_profile("slowboot", '[env]\nRIGCTL_SIM_TIME_SCALE = "0.2"\n')
    rig.open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    prober = ShortRequests(rig.port)
    prober.start()
    switch = rig.popen("switch", "slowboot")
    deadline = time.monotonic() + 60
    while (rig.record_if_any() or {}).get("profile") != "slowboot":
        assert time.monotonic() < deadline and switch.poll() is None, "the new profile never started booting"
        time.sleep(0.05)
    time.sleep(0.5)
    switch.kill()
    switch.wait(30)
    time.sleep(3)
    prober.stop.set()
    prober.join(60)
    assert prober.errors and set(prober.errors) == {"HTTP 503"}, prober.errors
    status = rig.status()
    assert "interrupted" in status["summary"], status["summary"]
    ending = json.loads(rig.rigctl("history", "--switches", "--json").stdout)[-1]
    assert ending["status"] == "interrupted" and ending["target"] == "slowboot", ending
    assert ending["held"] is not None and ending["refused"] is not None, ending
    rig.rigctl("status")  # read again: the ending is written once
    endings = json.loads(rig.rigctl("history", "--switches", "--json").stdout)
    assert [e["status"] for e in endings].count("interrupted") == 1, endings
