"""The watch service as systemd runs it: `rigctl watch` in its own process on the simulated rig,
with a real alert hook (a script that appends what it reads on stdin to a file)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.serving import add_profile, rigctl
from tests.support.waiting import wait_until

HOOK = textwrap.dedent(
    """\
    import sys
    data = sys.stdin.read()
    with open(sys.argv[1], "a") as out:
        out.write(data if data.endswith("\\n") else data + "\\n")
    """
)


class WatchRig:
    def __init__(self, home: Path, env: dict[str, str], profiles: Path, port: int) -> None:
        self.home, self.env, self.profiles, self.port = home, env, profiles, port
        self.hook_out = home / "hook.jsonl"
        self.hook = home / "hook.py"
        self.hook.write_text(HOOK)
        self.state_dir = Path(env["XDG_STATE_HOME"]) / "rigctl"
        self.config = Path(env["XDG_CONFIG_HOME"]) / "rigctl" / "config.toml"
        self.faults = home / "gpu-faults.json"
        self.env["RIGCTL_SIM_GPU_FAULTS"] = str(self.faults)
        self.watchers: list[subprocess.Popen[str]] = []

    def configure(self, alerts: str = "", supervise: str = "") -> None:
        command = json.dumps([sys.executable, str(self.hook), str(self.hook_out)])
        self.config.parent.mkdir(parents=True, exist_ok=True)
        self.config.write_text(
            f"[server]\nstop_grace = 3\nkill_wait = 2\n[alerts]\ncommand = {command}\n{alerts}\n"
            + (f"[supervise]\n{supervise}\n" if supervise else "")
        )

    def add_profile(self, name: str, body: str, parent: str = "qwen36-27b-awq-tp2") -> None:
        add_profile(self.profiles, name, body, self.port, parent)

    def rigctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return rigctl(self.env, *args)

    def watch(self, *args: str) -> subprocess.Popen[str]:
        """`rigctl watch` as the guide's unit starts it."""
        proc = subprocess.Popen(
            [sys.executable, "-m", "rigctl", "watch", "--interval", "1", *args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.watchers.append(proc)
        return proc

    def stop_watch(self, proc: subprocess.Popen[str]) -> tuple[int, str]:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        return proc.returncode, out

    def changes(self) -> list[dict[str, Any]]:
        """What the hook read on stdin, a JSON object a change."""
        if not self.hook_out.is_file():
            return []
        return [json.loads(line) for line in self.hook_out.read_text().splitlines() if line.strip()]

    def wait_change(
        self, what: str, match: Callable[[dict[str, Any]], bool], proc: subprocess.Popen[str] | None = None, timeout: float = 90
    ) -> dict[str, Any]:
        found: dict[str, Any] = wait_until(what, lambda: next((c for c in self.changes() if match(c)), None), proc, timeout)
        return found

    def serving_pid(self) -> int:
        data = json.loads(self.rigctl("status", "--json").stdout)
        return int(data["serving"]["server"]["pid"])

    def gpu_faults(self, faults: dict[str, Any] | None) -> None:
        if faults is None:
            self.faults.unlink(missing_ok=True)
        else:
            tmp = self.faults.with_suffix(".tmp")
            tmp.write_text(json.dumps(faults))
            os.replace(tmp, self.faults)

    def cleanup(self) -> None:
        for proc in self.watchers:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=30)


def fired(kind: str, state: str = "fired") -> Callable[[dict[str, Any]], bool]:
    return lambda change: change["kind"] == kind and change["state"] == state
