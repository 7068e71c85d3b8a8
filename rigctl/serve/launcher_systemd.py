"""The systemd launcher: the profile's argv and env become a drop-in for a configured unit,
then `systemctl restart`. Logs come from journalctl. systemd owns the process; rigctl
owns only the drop-in and an EnvironmentFile (0600, secrets stay off command lines)."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from rigctl import paths
from rigctl.atomic import write_text_atomic
from rigctl.errors import StopFailed
from rigctl.profiles.envfile import env_line
from rigctl.state import discover
from rigctl.state.servers import Runner, SystemdView, run
from rigctl.state.statefiles import ServerRecord

if TYPE_CHECKING:
    from rigctl.profiles.vllm_args import LaunchSpec

_C_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def systemd_quote(arg: str) -> str:
    """One ExecStart word: quoted, with systemd's own specials escaped ($ and % expand) and
    control characters written as C escapes, which ExecStart decodes: a newline in a value
    (an inline chat template) stays inside its word and never starts a line of its own."""
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$").replace("%", "%%")
    escaped = "".join(_C_ESCAPES.get(c, f"\\x{ord(c):02x}" if ord(c) < 32 or ord(c) == 127 else c) for c in escaped)
    return escaped if re.fullmatch(r"[A-Za-z0-9_@%+=:,./$-]+", escaped) else f'"{escaped}"'


def env_file_problems(env: dict[str, str]) -> list[str]:
    """Values an environment file cannot hold: a line break would start a line of its own."""
    return [
        f"env.{k}: the value holds a line break, which an environment file cannot carry safely; put it in a file and give its path"
        for k, v in env.items()
        if "\n" in v or "\r" in v
    ]


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr or done.stdout or "").strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


class SystemdLauncher(SystemdView):
    def __init__(self, unit: str, user: bool = False, dropin_dir: str = "", runner: Runner = run) -> None:
        super().__init__(unit, user, runner)
        default = (Path.home() / ".config/systemd/user" if user else Path("/etc/systemd/system")) / f"{unit}.d"
        self.dropin = Path(dropin_dir).expanduser() / "rigctl.conf" if dropin_dir else default / "rigctl.conf"

    def _check(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        done = self.runner(argv)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {(done.stderr or done.stdout).strip()}")
        return done

    def check(self, spec: LaunchSpec) -> list[str]:
        problems = env_file_problems(spec.env)
        if shutil.which("systemctl") is None:
            problems.append("the systemd launcher needs systemctl, which is not on PATH")
        else:
            shown = self.runner(self._systemctl("show", self.unit, "-p", "LoadState", "--value"))
            state = shown.stdout.strip()
            if shown.returncode != 0:
                problems.append(f"systemd cannot be asked about {self.unit}: {_last_line(shown)}")
            elif state != "loaded":
                problems.append(
                    f"{self.unit} is not a unit systemd knows (LoadState={state or 'none'}); "
                    "create it first (docs/guide/real-rig.md) or set [systemd] unit"
                )
        for directory in (self.dropin.parent, paths.state_dir()):
            problem = paths.writable_problem(directory, min_free=0)
            if problem:
                problems.append(f"cannot write the unit drop-in: {problem}" if directory == self.dropin.parent else problem)
        return problems

    def dropin_text(self, spec: LaunchSpec, profile: str) -> str:
        words = " ".join(systemd_quote(a) for a in spec.argv)
        return (
            f"# Written by rigctl for profile {profile}; rewritten on every switch.\n"
            f"[Service]\nEnvironmentFile={self.env_file}\nExecStart=\nExecStart={words}\n"
        )

    def start(self, spec: LaunchSpec, profile: str) -> ServerRecord:
        paths.ensure_private_dir(paths.state_dir())
        boot_id = uuid.uuid4().hex
        env = {**spec.env, discover.BOOT_ID_VAR: boot_id, discover.PROFILE_VAR: profile, discover.STATE_VAR: str(paths.state_dir())}
        write_text_atomic(self.env_file, "".join(env_line(k, v) + "\n" for k, v in env.items()), mode=0o600)
        text = self.dropin_text(spec, profile)
        # world-readable only when it names no secret (the keys live in the 0600 env file)
        secret = any(value and value in text for value in spec.secret_values)
        write_text_atomic(self.dropin, text, mode=0o600 if secret else 0o644)
        started = time.time()
        self._check(self._systemctl("daemon-reload"))
        self._check(self._systemctl("restart", self.unit))
        pid = self.runner(self._systemctl("show", self.unit, "-p", "MainPID", "--value")).stdout.strip()
        return ServerRecord(
            launcher=self.name,
            profile=profile,
            started=started,
            log_path="",
            host=spec.host,
            port=spec.port,
            served_names=spec.served_names,
            argv=tuple(spec.redacted_argv()),
            pid=int(pid) if pid.isdigit() and pid != "0" else None,
            unit=self.unit,
            boot_id=boot_id,
        )

    def stop(self, record: ServerRecord, grace: float) -> None:
        try:
            self._check(self._systemctl("stop", self.unit))
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            raise StopFailed(f"could not stop {self.unit}: {exc}") from exc
