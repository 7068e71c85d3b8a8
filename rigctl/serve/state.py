"""rigctl's record of what it serves: $XDG_STATE_HOME/rigctl/active.json (mode 0700 dir).

Written atomically by the switch transaction; read by every command that shows the
active profile.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rigctl import paths
from rigctl.atomic import write_text_atomic


def state_file() -> Path:
    return paths.state_dir() / "active.json"


@dataclass(frozen=True)
class ActiveState:
    profile: str | None  # the last profile that booted and is believed to serve
    last_good: str | None  # the profile a failed switch rolls back to
    status: str  # "serving" | "switching" | "stopped" | "failed"
    since: float
    detail: str = ""
    target: str | None = None  # during a switch: the profile being started
    owner_pid: int | None = None  # the rigctl process running the switch

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_state() -> ActiveState | None:
    try:
        data = json.loads(state_file().read_text())
        return ActiveState(**{k: data.get(k) for k in ActiveState.__dataclass_fields__ if k in data})
    except (OSError, ValueError, TypeError):
        return None


def write_state(state: ActiveState) -> None:
    paths.ensure_private_dir(paths.state_dir())
    write_text_atomic(state_file(), json.dumps(state.to_json(), indent=1) + "\n", mode=0o600)


def active_profile_name() -> str | None:
    """The profile the state file says serves (cheap; `serve.status.observe` verifies it)."""
    state = read_state()
    return state.profile if state and state.status == "serving" else None
