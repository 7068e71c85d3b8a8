"""Process identity: a start that no clock step changes, read from /proc as the kernel gives it."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from rigctl.proc import same_process, start_id

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")


@pytest.fixture
def oddly_named() -> Iterator[subprocess.Popen[bytes]]:
    """A process whose name holds ') ' and spaces, as /proc/PID/stat's second field allows."""
    child = subprocess.Popen([sys.executable, "-c", ("import time; open('/proc/self/comm', 'w').write('a) b (c'); time.sleep(60)")])
    deadline = time.monotonic() + 10
    while psutil.Process(child.pid).name() != "a) b (c" and time.monotonic() < deadline:
        time.sleep(0.02)
    yield child
    child.kill()
    child.wait()


def test_the_start_is_read_past_a_name_with_parentheses(oddly_named: subprocess.Popen[bytes]) -> None:
    first = start_id(oddly_named.pid)
    assert first is not None and first == start_id(oddly_named.pid)
    boot, _, ticks = first.rpartition(":")
    assert boot == Path("/proc/sys/kernel/random/boot_id").read_text().strip() and ticks.isdigit()
    assert first != start_id(1) or oddly_named.pid == 1


def test_the_start_decides_over_a_wall_clock_that_moved(oddly_named: subprocess.Popen[bytes]) -> None:
    pid, start = oddly_named.pid, start_id(oddly_named.pid)
    stepped = psutil.Process(pid).create_time() + 3600  # what a clock step does to psutil's create_time
    assert same_process(pid, stepped, start)
    assert not same_process(pid, None, "another-boot:1")
    assert not same_process(pid, stepped)  # the wall clock alone is fooled: why start_id exists


def test_a_process_that_is_gone_is_not_the_same() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    start = start_id(child.pid)
    child.wait()
    assert start_id(child.pid) is None
    assert not same_process(child.pid, None, start)
