"""The two files where rigctl writes down what serves (state_dir, mode 0700, written atomically):

- server.json, a ServerRecord: the server rigctl started (launcher, pid and its start time,
  port, boot token). A later rigctl adopts the server through it; the start time guards
  against a recycled pid, and the boot token (RIGCTL_BOOT_ID in the server's environment)
  tells this server from any other that answers on the port. It holds no secret: an API key
  stays in the server's own environment (see Launcher.api_key).
- active.json, an ActiveState: the profile rigctl believes serves, the last good one a
  failed switch rolls back to, and whether a switch is running (and whose).

What really serves is checked against the process and HTTP in state/serving.py.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from rigctl import jsonio, paths
from rigctl.atomic import write_text_atomic
from rigctl.proc import same_process

ActiveStatus = Literal["serving", "switching", "stopping", "stopped", "failed", "interrupted"]


@dataclass(frozen=True)
class ServerRecord:
    launcher: str
    profile: str
    started: float
    log_path: str
    host: str
    port: int
    served_names: tuple[str, ...]
    argv: tuple[str, ...]  # redacted
    pid: int | None = None
    create_time: float | None = None
    unit: str | None = None
    container: str | None = None
    boot_id: str | None = None
    start_id: str | None = None  # proc.start_id: the process's start, which no clock step changes
    front_door: str | None = None  # HOST:PORT of the front door it was started behind (the apps' address)

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"'port' is {self.port}, not a TCP port")
        if self.pid is not None and not 0 < self.pid < 2**22:  # the kernel's pid_max is at most 2^22
            raise ValueError(f"'pid' is {self.pid}, not a process id")

    @property
    def boot_key(self) -> str:
        """What tags this boot's rows in the record: its boot token, else the profile and start time."""
        return self.boot_id or f"{self.profile}@{self.started:.0f}"

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def record_file() -> Path:
    return paths.state_dir() / "server.json"


# The last record read and the text it came from: the dashboard reads server.json twice a
# second (the engine poll, the log tail); the same text is not parsed and checked field by field
# again (benchmarks/bench_tui.py). Shared by threads: replaced whole, never changed.
_last_read: tuple[Path, str, ServerRecord] | None = None


def read_record() -> ServerRecord | None:
    """The record; None when there is none; jsonio.DamagedFile when it cannot be used."""
    global _last_read
    path = record_file()
    text = jsonio.read_text(path)
    if text is None:
        return None
    last = _last_read
    if last is not None and last[0] == path and last[1] == text:
        return last[2]
    record = jsonio.build(ServerRecord, jsonio.parse_object(text, path), path)
    _last_read = (path, text, record)
    return record


@dataclass(frozen=True)
class RecordRead:
    """One read of server.json, handed on so that what a poll scrapes and what it decides serves
    come from the same read: a second read in the same poll can find the file changed between
    them (a damage mended by the rebuild before the first reader ever saw it)."""

    record: ServerRecord | None
    damage: str | None = None  # why the file cannot be used (jsonio.DamagedFile's line)


def read_record_once() -> RecordRead:
    """read_record's answer, or the damage it found, as a value."""
    try:
        return RecordRead(read_record())
    except jsonio.DamagedFile as exc:
        return RecordRead(None, str(exc))


def write_record(record: ServerRecord) -> None:
    paths.ensure_private_dir(paths.state_dir())
    write_text_atomic(record_file(), jsonio.dumps(record.to_json(), indent=1) + "\n", mode=0o600)


def clear_record() -> None:
    try:
        record_file().unlink()
    except FileNotFoundError:
        pass


def state_file() -> Path:
    return paths.state_dir() / "active.json"


STATUSES = ("serving", "switching", "stopping", "stopped", "failed", "interrupted")


@dataclass(frozen=True)
class ActiveState:
    profile: str | None  # the last profile that booted and is believed to serve
    last_good: str | None  # the profile a failed switch rolls back to
    status: ActiveStatus
    since: float
    detail: str = ""
    target: str | None = None  # during a switch: the profile being started
    owner_pid: int | None = None  # the rigctl process running the switch
    owner_start: str | None = None  # its proc.start_id (a pid is reused once its process is gone)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"'status' is {self.status[:40]!r}, not one of {', '.join(STATUSES)}")
        if self.owner_pid is not None and not 0 < self.owner_pid < 2**22:
            raise ValueError(f"'owner_pid' is {self.owner_pid}, not a process id")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_state() -> ActiveState | None:
    """The state; None when there is none; jsonio.DamagedFile when it cannot be used."""
    path = state_file()
    data = jsonio.read_object(path)
    return None if data is None else jsonio.build(ActiveState, data, path)


def read_state_or_none() -> ActiveState | None:
    """For displays that only mark the active profile: a damaged file marks none."""
    try:
        return read_state()
    except jsonio.DamagedFile:
        return None


def write_state(state: ActiveState) -> None:
    paths.ensure_private_dir(paths.state_dir())
    write_text_atomic(state_file(), jsonio.dumps(state.to_json(), indent=1) + "\n", mode=0o600)


def active_profile_name() -> str | None:
    """The profile the state file says serves (cheap; `serve.status.observe` verifies it)."""
    state = read_state_or_none()
    return state.profile if state and state.status == "serving" else None


def owner_alive(pid: int | None, start: str | None = None) -> bool:
    """Is the rigctl process that wrote a "switching" state still running?"""
    return pid is not None and (pid == os.getpid() or same_process(pid, start=start))
