"""An `[alerts] command` that floods its output: 300 MB on stdout and on stderr for the one alert,
then exit 1. The service drains and drops it (its memory bounded), says the failure once with the
first of its stderr and how much was dropped, and keeps watching."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path

from tests.support.waiting import wait_until
from tests.watch.harness import WatchRig

FLOOD = (
    "import sys\n"
    "sys.stdin.read()\n"
    "block = b'x' * (1 << 20)\n"
    "for _ in range(300):\n"
    "    sys.stdout.buffer.write(block)\n"
    "    sys.stderr.buffer.write(block)\n"
    "sys.exit(1)\n"
)


def peak_rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def test_a_flooding_hook_is_drained_in_bounded_memory_and_said_once(watch_rig: WatchRig) -> None:
    rig = watch_rig
    flood = rig.home / "flood.py"
    flood.write_text(FLOOD)
    command = json.dumps([sys.executable, str(flood)])
    rig.config.parent.mkdir(parents=True, exist_ok=True)
    rig.config.write_text(f"[server]\nstop_grace = 3\nkill_wait = 2\n[alerts]\ncommand = {command}\ncommand_timeout_s = 120\n")
    assert rig.rigctl("switch", "good").returncode == 0
    watch = rig.watch()
    wait_until("the service watching", lambda: (rig.state_dir / "alerts.json").is_file(), watch)
    os.killpg(rig.serving_pid(), signal.SIGKILL)  # the engine dies: one alert, one flood
    said: list[str] = []

    def failure_said() -> bool:
        assert watch.stdout is not None
        line = watch.stdout.readline()
        said.append(line)
        return "the alert command" in line

    wait_until("the hook's failure said", failure_said, watch, timeout=180)
    peak = peak_rss_mib(watch.pid)
    assert peak < 150, f"the service's peak RSS was {peak:.0f} MiB for a hook's 600 MB of output"
    line = said[-1]
    assert "exited 1: xxxx" in line and "bytes more of its stderr dropped" in line, line
    count = re.search(r"\(([\d,]+) bytes more of its stderr dropped\)", line)
    assert count, line
    dropped = int(count.group(1).replace(",", ""))
    assert dropped == 300 * (1 << 20) - 64 * 1024, line
    code, out = rig.stop_watch(watch)
    assert code == 0 and "Traceback" not in out and "the alert command" not in out, out  # said once
