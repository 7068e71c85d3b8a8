"""rigctl's record of what it serves: $XDG_STATE_HOME/rigctl/active.json (mode 0700 dir).

Written atomically by the switch transaction; read by every command that shows the
active profile.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from rigctl import jsonio, paths
from rigctl.atomic import write_text_atomic


def state_file() -> Path:
    return paths.state_dir() / "active.json"


@dataclass(frozen=True)
class ActiveState:
    profile: str | None  # the last profile that booted and is believed to serve
    last_good: str | None  # the profile a failed switch rolls back to
    status: str  # "serving" | "switching" | "stopped" | "failed" | "interrupted"
    since: float
    detail: str = ""
    target: str | None = None  # during a switch: the profile being started
    owner_pid: int | None = None  # the rigctl process running the switch

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


def owner_alive(pid: int | None) -> bool:
    """Is the rigctl process that wrote a "switching" state still running?"""
    if pid is None:
        return False
    if pid == os.getpid():
        return True
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
