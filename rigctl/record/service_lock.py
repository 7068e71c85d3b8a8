"""Who keeps the record: the watch service first. The service holds watch.lock (an flock) for its
whole life; a TUI records only while no service runs, and stands aside (its last partial row
written) as soon as one starts, so a service started under an open TUI takes the record over
instead of exiting into systemd's start limit."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from rigctl import paths
from rigctl.errors import RigctlError
from rigctl.files import open_own

TRIES = 20


class ServiceRunning(RigctlError):
    """Another watch service runs: one at a time."""


def lock_path() -> Path:
    return paths.state_dir() / "watch.lock"


class ServiceLock:
    """Held by the running watch service; released when it exits, however it exits."""

    def __init__(self) -> None:
        path = lock_path()
        try:
            paths.ensure_private_dir(path.parent)
            self._fd = open_own(path, os.O_RDWR | os.O_CREAT)
        except RigctlError:
            raise
        except OSError as exc:
            raise RigctlError(f"{path}: cannot open the watch service's lock: {exc.strerror or exc}") from None
        for attempt in range(TRIES):
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt == TRIES - 1:
                    holder = os.pread(self._fd, 32, 0).decode(errors="replace").strip() or "?"
                    os.close(self._fd)
                    raise ServiceRunning(f"another rigctl watch (pid {holder}) watches this rig; one at a time") from None
                time.sleep(0.1)  # a TUI asking service_pid() holds it shared for microseconds
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def close(self) -> None:
        os.close(self._fd)


def service_pid() -> int | None:
    """The pid of the watch service while one runs, else None (never blocks, never takes the lock
    for long: a shared flock tried and let go at once)."""
    try:
        fd = open_own(lock_path(), os.O_RDONLY)
    except (OSError, RigctlError):
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
