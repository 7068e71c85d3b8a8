"""The session's leak check (tests/conftest.py) finds what a test left running and only that."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from tests.support import leaks


def start(token: str, seconds: float) -> subprocess.Popen[bytes]:
    env = {**os.environ, leaks.TOKEN_VAR: token}
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"], env=env)


def test_a_process_left_running_is_named_and_killed_and_one_that_ends_in_its_grace_is_not() -> None:
    token = uuid.uuid4().hex  # not the session's: its own check stays clean
    left, ending = start(token, 600), start(token, 0.2)
    other = start(uuid.uuid4().hex, 600)  # another session's: never touched
    try:
        found = leaks.reap_leftovers(token, grace_s=5)
        assert len(found) == 1 and f"pid {left.pid} " in found[0], found
        assert "test_a_process_left_running" in found[0]  # the test that started it
        assert left.wait(10) == -9 and ending.wait(10) == 0
        assert other.poll() is None and leaks.reap_leftovers(token, grace_s=0) == []
    finally:
        for proc in (left, ending, other):
            proc.kill()
            proc.wait()
