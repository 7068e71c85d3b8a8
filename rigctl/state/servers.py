"""How rigctl sees a server it started, by the launcher that started it: is it alive, how did
it exit, which key does it check, where is its log. The read side of serve/'s launchers, which
extend these with check, start and stop; whatever only watches uses these and never reaches the
code that starts servers."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import psutil

from rigctl import paths
from rigctl.config import Settings
from rigctl.proc import same_process
from rigctl.profiles.envfile import read_env_file
from rigctl.state import discover
from rigctl.state.logfollow import CommandFollower, FileFollower
from rigctl.state.statefiles import ServerRecord

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        return subprocess.CompletedProcess(list(argv), 127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(argv), 124, "", f"{' '.join(argv)}: no answer in 120 s")


class LogFollower(Protocol):
    def read_new(self, limit: int = ...) -> list[str]: ...

    def close(self) -> None: ...


class ServerView(Protocol):
    name: str

    def serves_port(self, record: ServerRecord) -> bool | None:
        """Is the listener on the record's port this server (True/False), or cannot it be told?"""
        ...

    def api_key(self, record: ServerRecord) -> str | None:
        """The key the server checks, read from where the launch put it (never from rigctl's files)."""
        ...

    def alive(self, record: ServerRecord) -> bool: ...

    def exit_code(self, record: ServerRecord) -> int | None: ...

    def follower(self, record: ServerRecord, from_end: bool = False) -> LogFollower: ...


class ProcessView:
    """A server rigctl started as its own process group, output to a log file."""

    name = "process"

    def alive(self, record: ServerRecord) -> bool:
        """The recorded server runs: its start (clock ticks since boot) when the record has it,
        else its boot token, else the wall-clock start within a second (a clock step defeats only
        the last, and only records written before start_id existed rely on it)."""
        if record.pid is None:
            return False
        if record.start_id is None and record.boot_id is not None:
            env = discover.process_environ(record.pid)
            if env is not None:
                return env.get(discover.BOOT_ID_VAR) == record.boot_id and same_process(record.pid)
        return same_process(record.pid, record.create_time, record.start_id)

    def exit_code(self, record: ServerRecord) -> int | None:
        """None while it runs; -1 once it has gone (only the process that started it saw how)."""
        return None if self.alive(record) else -1

    def serves_port(self, record: ServerRecord) -> bool | None:
        return discover.listener_is(record.port, record.boot_id, record.pid)

    def api_key(self, record: ServerRecord) -> str | None:
        """VLLM_API_KEY in the server's environment, else the first --api-key of its command line
        (several keys stay there: the variable holds one). Read from the process, never stored."""
        if not record.pid or not self.alive(record):
            return None
        env = discover.process_environ(record.pid) or {}
        if env.get("VLLM_API_KEY"):
            return env["VLLM_API_KEY"]
        try:
            argv = psutil.Process(record.pid).cmdline()
        except psutil.Error:
            return None
        return argv[argv.index("--api-key") + 1] if "--api-key" in argv[:-1] else None

    def follower(self, record: ServerRecord, from_end: bool = False) -> FileFollower:
        return FileFollower(record.log_path, from_end=from_end)


class SystemdView:
    """A configured unit systemd runs; its log in the journal."""

    name = "systemd"

    def __init__(self, unit: str, user: bool = False, runner: Runner = run) -> None:
        self.unit = unit
        self.user = user
        self.runner = runner
        self.env_file = paths.state_dir() / "systemd.env"

    def _systemctl(self, *args: str) -> list[str]:
        return ["systemctl", *(["--user"] if self.user else []), *args]

    def alive(self, record: ServerRecord) -> bool:
        return self.runner(self._systemctl("is-active", self.unit)).stdout.strip() in ("active", "activating", "reloading")

    def exit_code(self, record: ServerRecord) -> int | None:
        shown = self.runner(self._systemctl("show", self.unit, "-p", "ActiveState", "-p", "ExecMainStatus")).stdout
        values = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
        if values.get("ActiveState") in ("failed", "inactive"):
            status = values.get("ExecMainStatus", "")
            return int(status) if status.lstrip("-").isdigit() else -1
        return None

    def serves_port(self, record: ServerRecord) -> bool | None:
        return discover.listener_is(record.port, record.boot_id, record.pid)

    def api_key(self, record: ServerRecord) -> str | None:
        return read_env_file(self.env_file).get("VLLM_API_KEY") or None

    def journal_command(self, since: float) -> list[str]:
        unit_flag = "--user-unit" if self.user else "-u"
        return ["journalctl", unit_flag, self.unit, "-o", "cat", "--no-pager", "-f", "--since", f"@{int(since)}"]

    def follower(self, record: ServerRecord, from_end: bool = False) -> CommandFollower:
        return CommandFollower(self.journal_command(time.time() if from_end else record.started))


class DockerView:
    """A named container; its log from `docker logs`."""

    name = "docker"

    def __init__(self, container: str, runner: Runner = run) -> None:
        self.container = container
        self.runner = runner
        self.env_file = paths.state_dir() / "docker.env"

    def _inspect(self, field: str) -> str:
        return self.runner(["docker", "inspect", "-f", f"{{{{.State.{field}}}}}", self.container]).stdout.strip()

    def alive(self, record: ServerRecord) -> bool:
        return self._inspect("Running") == "true"

    def exit_code(self, record: ServerRecord) -> int | None:
        if self.alive(record):
            return None
        code = self._inspect("ExitCode")
        return int(code) if code.lstrip("-").isdigit() else -1

    def serves_port(self, record: ServerRecord) -> bool | None:
        return None  # docker-proxy listens for the container: the listener says nothing of which boot

    def api_key(self, record: ServerRecord) -> str | None:
        return read_env_file(self.env_file).get("VLLM_API_KEY") or None

    def logs_command(self, since: float, follow: bool = True) -> list[str]:
        return ["docker", "logs", *(["-f"] if follow else []), "--since", str(int(since)), self.container]

    def follower(self, record: ServerRecord, from_end: bool = False) -> CommandFollower:
        return CommandFollower(self.logs_command(time.time() if from_end else record.started))


def view_for(record: ServerRecord, settings: Settings) -> ServerView:
    """How to see the server of `record`, by the launcher that started it (it may differ from
    today's settings)."""
    if record.launcher == "systemd":
        return SystemdView(settings.systemd_unit, settings.systemd_user)
    if record.launcher == "docker":
        return DockerView(settings.docker_container)
    return ProcessView()
