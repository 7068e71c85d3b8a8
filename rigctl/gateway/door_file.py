"""gateway.json in the state dir: the rig's front door as it started (its pid, the apps' address,
the words it was started with, whether systemd runs it). Written by the door when it opens and
left when it ends, so that a read of the rig can say which door is gone and `rigctl watch` can
start it again with the same words (never when systemd runs it: systemd brings its unit back)."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from rigctl import jsonio, paths
from rigctl.atomic import write_text_atomic
from rigctl.proc import start_id

API_KEY_ENV = "RIGCTL_GATEWAY_API_KEY"  # the door's key when no --api-key-file names one (never argv: ps shows argv)


@dataclass(frozen=True)
class DoorFile:
    pid: int
    listen: str  # the apps' address: HOST:PORT
    argv: tuple[str, ...]  # rigctl's words after `rigctl` (never a key: keys come from a file or the environment)
    systemd: bool  # run by systemd (a unit, or socket activation): systemd restarts it, not rigctl watch
    started: float
    start: str | None = None  # proc.start_id of pid
    key_from_env: bool = False  # its API key came from $RIGCTL_GATEWAY_API_KEY: a restart needs it there too


def door_file() -> Path:
    return paths.state_dir() / "gateway.json"


def write_door_file(listen: str, argv: list[str], systemd: bool, key_from_env: bool) -> None:
    """Written by the door as it opens; OSError for the door to say (it serves on without it)."""
    pid = os.getpid()
    record = DoorFile(pid, listen, tuple(argv), systemd, time.time(), start_id(pid), key_from_env)
    paths.ensure_private_dir(paths.state_dir())
    write_text_atomic(door_file(), jsonio.dumps(asdict(record), indent=1) + "\n", mode=0o600)


def read_door_file() -> DoorFile | None:
    """The last door's record; None when no door ever opened here or the file cannot be used."""
    path = door_file()
    text = jsonio.read_text(path)
    if text is None:
        return None
    try:
        return jsonio.build(DoorFile, jsonio.parse_object(text, path), path)
    except jsonio.DamagedFile:
        return None
