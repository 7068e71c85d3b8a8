"""The systemd launcher: the profile's argv and env become a drop-in for a configured unit,
then `systemctl restart`. Logs come from journalctl. systemd owns the process; rigctl
owns only the drop-in and an EnvironmentFile (0600, secrets stay off command lines)."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rigctl import paths
from rigctl.atomic import write_text_atomic
from rigctl.profiles.vllm_args import LaunchSpec
from rigctl.serve.logfollow import CommandFollower
from rigctl.serve.record import ServerRecord

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=120)


def systemd_quote(arg: str) -> str:
    """One ExecStart word: quoted, with systemd's own specials escaped ($ and % expand)."""
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$").replace("%", "%%")
    return escaped if re.fullmatch(r"[A-Za-z0-9_@%+=:,./$-]+", escaped) else f'"{escaped}"'


def env_line(key: str, value: str) -> str:
    return f'{key}="{value.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'


class SystemdLauncher:
    name = "systemd"

    def __init__(self, unit: str, user: bool = False, dropin_dir: str = "", runner: Runner = run) -> None:
        self.unit = unit
        self.user = user
        self.runner = runner
        default = (Path.home() / ".config/systemd/user" if user else Path("/etc/systemd/system")) / f"{unit}.d"
        self.dropin = Path(dropin_dir).expanduser() / "rigctl.conf" if dropin_dir else default / "rigctl.conf"
        self.env_file = paths.state_dir() / "systemd.env"

    def _systemctl(self, *args: str) -> list[str]:
        return ["systemctl", *(["--user"] if self.user else []), *args]

    def _check(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        done = self.runner(argv)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {(done.stderr or done.stdout).strip()}")
        return done

    def dropin_text(self, spec: LaunchSpec, profile: str) -> str:
        words = " ".join(systemd_quote(a) for a in spec.argv)
        return (f"# Written by rigctl for profile {profile}; rewritten on every switch.\n"
                f"[Service]\nEnvironmentFile={self.env_file}\nExecStart=\nExecStart={words}\n")

    def start(self, spec: LaunchSpec, profile: str) -> ServerRecord:
        paths.ensure_private_dir(paths.state_dir())
        write_text_atomic(self.env_file, "".join(env_line(k, v) + "\n" for k, v in spec.env.items()), mode=0o600)
        write_text_atomic(self.dropin, self.dropin_text(spec, profile), mode=0o644)
        started = time.time()
        self._check(self._systemctl("daemon-reload"))
        self._check(self._systemctl("restart", self.unit))
        pid = self.runner(self._systemctl("show", self.unit, "-p", "MainPID", "--value")).stdout.strip()
        return ServerRecord(launcher=self.name, profile=profile, started=started, log_path="", host=spec.host,
                            port=spec.port, served_names=spec.served_names, argv=tuple(spec.redacted_argv()),
                            pid=int(pid) if pid.isdigit() and pid != "0" else None, unit=self.unit)

    def alive(self, record: ServerRecord) -> bool:
        return self.runner(self._systemctl("is-active", self.unit)).stdout.strip() in ("active", "activating",
                                                                                       "reloading")

    def exit_code(self, record: ServerRecord) -> int | None:
        shown = self.runner(self._systemctl("show", self.unit, "-p", "ActiveState", "-p", "ExecMainStatus")).stdout
        values = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
        if values.get("ActiveState") in ("failed", "inactive"):
            status = values.get("ExecMainStatus", "")
            return int(status) if status.lstrip("-").isdigit() else -1
        return None

    def stop(self, record: ServerRecord, grace: float) -> None:
        self._check(self._systemctl("stop", self.unit))

    def journal_command(self, since: float) -> list[str]:
        unit_flag = "--user-unit" if self.user else "-u"
        return ["journalctl", unit_flag, self.unit, "-o", "cat", "--no-pager", "-f", "--since", f"@{int(since)}"]

    def follower(self, record: ServerRecord, from_end: bool = False) -> CommandFollower:
        return CommandFollower(self.journal_command(time.time() if from_end else record.started))
