"""What the TUI asks of another rig over SSH: its profiles, and a switch whose lines arrive as
the rig prints them. The same run_remote as `rigctl --rig`, with no terminal to inherit."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from rigctl.errors import ExitCode, RigctlError, one_line
from rigctl.remote.ssh import run_remote
from rigctl.rig_table import RemoteRig

# `rigctl switch`'s exit codes, as the TUI says them
SWITCH_ENDINGS = {
    int(ExitCode.OK): "switched",
    int(ExitCode.FAILURE): "failed",
    int(ExitCode.BAD_INPUT): "refused: nothing was touched",
    int(ExitCode.ROLLED_BACK): "failed or refused: the previous profile serves",
    int(ExitCode.ROLLBACK_FAILED): "failed, and the rollback too: nothing serves",
}


@dataclass(frozen=True)
class RemoteProfile:
    name: str
    active: bool
    description: str
    error: str | None  # the rig's own check of it: a profile in error would be refused there


def remote_profiles(rig: RemoteRig) -> list[RemoteProfile]:
    """The rig's `rigctl profile list --json`; RigctlError (one line) when it cannot be had."""
    out: list[bytes] = []
    err: list[bytes] = []
    done = run_remote(rig, ["profile", "list", "--json"], out.append, err.append, stdin=subprocess.DEVNULL)
    if done.code != 0:
        said = b"".join(err).decode("utf-8", "replace").strip().splitlines()
        raise RigctlError(f"rig {rig.name}: profile list failed: {one_line(said[-1] if said else f'exit {done.code}')}")
    try:
        rows = json.loads(b"".join(out))
        return [RemoteProfile(str(r["name"]), bool(r.get("active")), str(r.get("description") or ""), r.get("error")) for r in rows]
    except (ValueError, TypeError, KeyError) as exc:
        raise RigctlError(f"rig {rig.name}: its profile list is not rigctl's JSON ({exc})") from exc


def remote_switch(
    rig: RemoteRig,
    profile: str,
    on_line: Callable[[str], None],
    started: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> int:
    """`rigctl switch PROFILE` on `rig`: each line of its progress and its outcome to `on_line` as
    the rig prints it; its exit code (SWITCH_ENDINGS says what it means). `started` gets the ssh
    process, for a caller that leaves early to end it (the switch there goes on)."""

    def line(raw: bytes) -> None:
        on_line(one_line(raw.decode("utf-8", "replace").rstrip("\r\n")))

    return run_remote(rig, ["switch", profile], line, line, stdin=subprocess.DEVNULL, started=started).code
