"""The session's leak check (tests/conftest.py) finds what a test left running and only that, and
the next session reaps what a killed one left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

from tests.support import leaks


def start(token: str, seconds: float) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != leaks.OWNER_VAR} | {leaks.TOKEN_VAR: token}  # no owner: no orphan
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


KILLED_SESSION = """
import subprocess, sys, time
from tests.support import leaks
leaks.mark_this_session()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(child.pid, flush=True)
time.sleep(600)
"""


def test_what_a_killed_session_left_is_reaped_by_the_next_and_a_live_sessions_is_not() -> None:
    owner = subprocess.Popen([sys.executable, "-c", KILLED_SESSION], stdout=subprocess.PIPE, text=True)
    live = subprocess.Popen([sys.executable, "-c", KILLED_SESSION], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and live.stdout is not None
        child, live_child = int(owner.stdout.readline()), int(live.stdout.readline())
        owner.send_signal(signal.SIGKILL)  # as a CI timeout kills a run: its end never comes
        owner.wait(10)
        found = leaks.reap_orphans()
        assert [line for line in found if f"pid {child} " in line], found
        assert not [line for line in found if f"pid {live_child} " in line], found  # its session still runs
        assert all(f"pid {child} " not in line for line in leaks.reap_orphans())  # killed once, gone
    finally:
        for proc in (owner, live):
            proc.kill()
            proc.wait()
        leaks.reap_orphans()  # the live one's child, now that its owner is gone
