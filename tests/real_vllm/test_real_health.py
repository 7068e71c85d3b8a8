"""`rigctl status --check` against the real vLLM CPU build: healthy while it serves, down (the
process gone) once something other than rigctl killed it."""

from __future__ import annotations

import json
import os
import signal
import time

from tests.real_vllm.conftest import RealRig


def check(real: RealRig) -> tuple[int, dict[str, object]]:
    done = real.rigctl("status", "--check", "--window", "2", "--json", timeout=120)
    answer = json.loads(done.stdout)
    assert answer["exit_code"] == done.returncode, answer
    return done.returncode, answer


def test_healthy_while_it_serves_then_down_once_killed(real: RealRig) -> None:
    started = real.rigctl("switch", "tiny", timeout=400)
    assert started.returncode == 0, started.stdout + started.stderr
    code, answer = check(real)
    assert code == 0 and answer["check"] == "healthy" and str(answer["cause"]).startswith("tiny serves (pid ")
    pid = real.record()["pid"]
    os.killpg(pid, signal.SIGKILL)  # the engine dies; rigctl did not stop it
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        code, answer = check(real)
        if code == 7:
            break
        time.sleep(0.5)
    assert code == 7 and answer["check"] == "down", answer
    assert answer["cause"] == f"the server of tiny (pid {pid}) is gone"
