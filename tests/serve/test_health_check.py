"""`rigctl status --check` as a script runs it: an exit code it can trust and one line naming the
cause, on the simulator started as vLLM is (healthy, frozen, killed, stalled with /health 200)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import httpx

from rigctl.serve.lock import RigLock
from tests.support.serving import add_profile, rigctl


def check(env: dict[str, str]) -> tuple[int, dict[str, object], str]:
    as_json = rigctl(env, "status", "--check", "--window", "1", "--json")
    text = rigctl(env, "status", "--check", "--window", "1")
    assert as_json.returncode == text.returncode, (as_json.stdout, text.stdout)
    assert len(text.stdout.strip().splitlines()) == 1 and "Traceback" not in text.stderr
    answer = json.loads(as_json.stdout)
    assert answer["exit_code"] == as_json.returncode and text.stdout.startswith(f"{answer['check']}: ")
    return as_json.returncode, answer, text.stdout.strip()


def test_nothing_started_is_down(env: dict[str, str]) -> None:
    code, answer, line = check(env)
    assert code == 7 and answer["check"] == "down"
    assert line == "down: nothing serves: rigctl has started no server here"


def test_a_bench_holding_the_rig_is_said_with_its_own_exit_code(env: dict[str, str]) -> None:
    """Each arm of a bench stops and starts the server: between two arms nothing serves, and a
    script that pages on "down" must not page for the bench at work."""
    with RigLock("bench plan-a"):
        code, answer, line = check(env)
        status = rigctl(env, "status")
        as_json = json.loads(rigctl(env, "status", "--json").stdout)
    assert code == 9 and answer["check"] == "benching"
    assert line.startswith(f"benching: pid {os.getpid()} (bench plan-a, since ") and "its arms switch profiles" in line
    assert f"note: the rig is held: pid {os.getpid()} (bench plan-a, since " in status.stdout
    assert status.stdout.startswith("nothing serves")  # the summary itself, never "serving: ..."
    assert as_json["held_by"].startswith(f"pid {os.getpid()} (bench plan-a")
    assert check(env)[0] == 7  # the bench gone: down is down again


def test_healthy_then_frozen_then_killed(env: dict[str, str]) -> None:
    assert rigctl(env, "switch", "good").returncode == 0
    code, answer, line = check(env)
    assert code == 0 and answer["check"] == "healthy" and line.startswith("healthy: good serves (pid ")
    pid = json.loads(rigctl(env, "status", "--json").stdout)["serving"]["server"]["pid"]
    os.kill(pid, signal.SIGSTOP)  # a wedged engine: the process is there, nothing answers
    try:
        code, answer, line = check(env)
        assert code == 7 and answer["check"] == "down" and "does not answer" in line, line
    finally:
        os.kill(pid, signal.SIGCONT)
    os.kill(pid, signal.SIGKILL)  # rigctl did not stop it
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        code, answer, line = check(env)
        if "is gone" in line:
            break
        time.sleep(0.2)
    assert code == 7 and line == f"down: the server of good (pid {pid}) is gone", line
    state = json.loads(rigctl(env, "status", "--json").stdout)["serving"]["state"]
    assert state["status"] == "down" and state["recorded_status"] == "serving"  # never "serving" beside "gone"


def test_a_stalled_engine_with_health_200_is_degraded(env: dict[str, str], profiles: Path, port: int) -> None:
    add_profile(profiles, "stalls", '[env]\nRIGCTL_SIM_STALL_AFTER = "4"\n', port)
    assert rigctl(env, "switch", "stalls").returncode == 0
    url = f"http://127.0.0.1:{port}"
    assert httpx.get(f"{url}/health", timeout=5).status_code == 200
    model = httpx.get(f"{url}/v1/models", timeout=5).json()["data"][0]["id"]
    time.sleep(4.5)  # the simulator stops scheduling 4 s after its engine started

    def ask() -> None:
        try:
            httpx.post(f"{url}/v1/completions", json={"model": model, "prompt": "hello", "max_tokens": 8}, timeout=20)
        except httpx.HTTPError:
            pass  # it never answers: that is the fault

    askers = [threading.Thread(target=ask, daemon=True) for _ in range(3)]
    for t in askers:
        t.start()
    time.sleep(0.5)
    assert httpx.get(f"{url}/health", timeout=5).status_code == 200  # "healthy" to a liveness probe
    code, answer, line = check(env)
    assert code == 8 and answer["check"] == "degraded", line
    assert "admission stalled: 3 request(s) waiting and no token produced in" in line
    stopped = rigctl(env, "stop", "--no-drain")  # its queue never drains: the owner cuts it
    assert stopped.returncode == 0, stopped.stderr


def test_every_json_outcome_is_one_json_object(env: dict[str, str]) -> None:
    usage = rigctl(env, "status", "--check", "--window", "0", "--json")
    assert usage.returncode == 2 and json.loads(usage.stdout) == {
        "error": "--window must be in (0, 600] seconds",
        "exit_code": 2,
    }
    refused = rigctl(env, "switch", "no-such-profile", "--json")
    assert refused.returncode == 2 and json.loads(refused.stdout)["exit_code"] == 2
    bad_flag = rigctl(env, "status", "--no-such-flag", "--json")
    assert bad_flag.returncode == 2 and json.loads(bad_flag.stdout)["exit_code"] == 2
