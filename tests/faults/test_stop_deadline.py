"""Fault 9: after SIGKILL the wait had no deadline, so a process that does not go away (stuck in
the driver in state D, or one rigctl may not kill) hung rigctl forever.

A real process that survives rigctl's SIGKILL: one owned by another user, with rigctl run in a
user namespace of its own, where it keeps its files but has no right to signal that process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import psutil
import pytest

from tests.faults.rig import Rig


def test_a_server_that_outlives_sigkill_is_reported_with_its_pid(rig: Rig) -> None:
    if os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("unshare"):
        pytest.skip("needs root, setpriv and unshare to make a process rigctl cannot kill")
    stuck = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "setsid", "sleep", "300"])
    try:
        time.sleep(0.3)
        leader = next(
            p for p in [*psutil.Process(stuck.pid).children(recursive=True), psutil.Process(stuck.pid)] if p.name() == "sleep"
        )
        rig.state_dir.mkdir(parents=True, exist_ok=True)
        (rig.state_dir / "server.json").write_text(
            json.dumps(
                {
                    "launcher": "process",
                    "profile": "good",
                    "started": time.time(),
                    "log_path": "",
                    "host": "127.0.0.1",
                    "port": rig.port,
                    "served_names": ["qwen3.6-27b"],
                    "argv": ["vllm", "serve"],
                    "pid": leader.pid,
                    "create_time": leader.create_time(),
                }
            )
        )
        probe = subprocess.run(["unshare", "--user", "--map-root-user", "true"], capture_output=True)
        if probe.returncode != 0:
            pytest.skip(f"no user namespaces here: {probe.stderr.decode().strip()}")
        started = time.monotonic()
        stopped = rig.rigctl("stop", prefix=("unshare", "--user", "--map-root-user"))
        took = time.monotonic() - started
        assert stopped.returncode == 1, stopped.stdout + stopped.stderr
        line = stopped.stderr.strip().splitlines()[-1]
        assert line.startswith(f"good could not be stopped: its process group {leader.pid} is still alive 2 s after SIGKILL"), line
        assert f"ps -o pid,stat,user,cmd -g {leader.pid}" in line
        assert took < 15  # grace 3 s + kill wait 2 s, then it says so: never forever
        assert rig.record()["pid"] == leader.pid  # still recorded: a later stop can retry
        status = rig.status()
        assert "good could not be stopped" in status["summary"] or status["server"]["alive"]
    finally:
        for proc in psutil.Process(stuck.pid).children(recursive=True):
            proc.kill()
        stuck.kill()
        stuck.wait()
