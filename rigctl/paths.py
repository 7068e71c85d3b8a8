"""Where rigctl keeps its files: XDG base directories, overridable by env.

Kept free of any rigctl import but errors so every layer can use it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from rigctl.errors import UnsafePath


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def config_dir() -> Path:
    """$XDG_CONFIG_HOME/rigctl (or RIGCTL_CONFIG_DIR)."""
    override = os.environ.get("RIGCTL_CONFIG_DIR")
    return Path(override) if override else _xdg("XDG_CONFIG_HOME", ".config") / "rigctl"


def state_dir() -> Path:
    """$XDG_STATE_HOME/rigctl (or RIGCTL_STATE_DIR): active profile, boot records, logs."""
    override = os.environ.get("RIGCTL_STATE_DIR")
    return Path(override) if override else _xdg("XDG_STATE_HOME", ".local/state") / "rigctl"


def gateway_socket() -> Path:
    """The front door's control socket (gateway/control.py): `status` looks for it before it imports
    the door's client."""
    return state_dir() / "gateway.sock"


def alerts_file() -> Path:
    """What the alerts' watcher says fires now (alerts/firing.py); `status` looks for it first too."""
    return state_dir() / "alerts.json"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700; tighten it if it already exists. A symbolic link
    there is refused, never followed: rigctl may run as root, and a chmod or a write through a
    link planted in its own dirs would land wherever the link points."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafePath(
                path,
                "a symbolic link where rigctl keeps its files; rigctl never writes through one "
                "(remove it, or point XDG_STATE_HOME/RIGCTL_STATE_DIR at the real directory)",
            ) from None
        if exc.errno == errno.ENOTDIR:
            raise UnsafePath(path, "not a directory") from None
        raise
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    return path


MIN_FREE_BYTES = 16 * 1024 * 1024  # room for a boot log and rigctl's records


def writable_problem(directory: Path, min_free: int = MIN_FREE_BYTES) -> str | None:
    """Why rigctl could not write in `directory` now (read-only, not allowed, full), or None.

    Tried for real (a small file written, synced and removed), because permission bits say
    nothing for root and nothing about a full or read-only filesystem.
    """
    existing = directory
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent  # a directory not made yet: it would be made there
    try:
        probe = existing / f".rigctl-write-test-{os.getpid()}"
        try:
            probe.unlink()  # a probe left by a killed rigctl of the same pid (never a link followed: O_EXCL)
        except FileNotFoundError:
            pass
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, b"\0" * 4096)
            os.fsync(fd)
        finally:
            os.close(fd)
            try:
                probe.unlink()
            except FileNotFoundError:
                pass
        stats = os.statvfs(existing)
    except OSError as exc:
        return f"{directory} is not writable: {exc.strerror or exc}"
    free = stats.f_bavail * stats.f_frsize
    if free < min_free:
        return (
            f"the filesystem of {directory} is full ({free // 1024:,} KiB free; rigctl needs "
            f"{min_free // 2**20} MiB for the boot log and its records)"
        )
    return None


def free_bytes(directory: Path) -> int | None:
    try:
        stats = os.statvfs(directory)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize
