"""One switch at a time on this rig, whether it comes from the TUI or a CLI over SSH.

An flock on state_dir/rig.lock (released by the kernel if rigctl dies); the holder writes
who it is, so the one refused can say why. Re-entrant in the thread that holds it: a bench
holds the rig for its whole run and switches inside it; any other thread is refused.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from dataclasses import dataclass
from types import TracebackType

from rigctl import paths
from rigctl.errors import RigctlError, UnsafePath
from rigctl.files import open_own, read_own


class RigBusyError(RigctlError):
    """Another switch holds the rig."""


_HOLDER = threading.Lock()
_held: dict[str, int | None] = {"thread": None, "depth": 0}  # the thread of this process that holds the rig


class RigLock:
    def __init__(self, purpose: str, wait: float = 0.0) -> None:
        self.purpose = purpose
        self.wait = wait
        self.path = paths.state_dir() / "rig.lock"
        self._fd: int | None = None
        self._nested = False

    def holder(self) -> str:
        try:
            info = json.loads(read_own(self.path, 4096) or b"{}")
            since = time.strftime("%H:%M:%S", time.localtime(float(info.get("since", 0))))
            return f"pid {int(info.get('pid'))} ({str(info.get('purpose'))[:80]}, since {since})"
        except (OSError, ValueError, TypeError, AttributeError, OverflowError):
            return "another rigctl"

    def _open(self) -> int:
        try:
            paths.ensure_private_dir(self.path.parent)
            return open_own(self.path, os.O_RDWR | os.O_CREAT)
        except UnsafePath:
            raise
        except OSError:
            pass
        try:  # a read-only state dir: flock works on a read-only descriptor, a stop can still run
            return open_own(self.path, os.O_RDONLY)
        except UnsafePath:
            raise
        except OSError as exc:
            raise RigctlError(f"cannot take the rig lock {self.path}: {exc.strerror or exc}") from exc

    def __enter__(self) -> RigLock:
        with _HOLDER:
            if _held["thread"] == threading.get_ident():
                _held["depth"] = (_held["depth"] or 0) + 1
                self._nested = True
                return self
        fd = self._open()
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = self.holder()
                    os.close(fd)
                    hint = " (rigctl switch --wait SECONDS to queue behind it)" if not self.wait else ""
                    raise RigBusyError(f"the rig is busy: {holder} holds the switch lock{hint}") from None
                time.sleep(0.1)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps({"pid": os.getpid(), "purpose": self.purpose, "since": time.time()}).encode())
        except OSError:
            pass  # who holds it is a courtesy for the one refused; the flock is what counts
        self._fd = fd
        with _HOLDER:
            _held.update(thread=threading.get_ident(), depth=1)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._nested:
            self._nested = False
            with _HOLDER:
                _held["depth"] = (_held["depth"] or 1) - 1
            return
        with _HOLDER:
            _held.update(thread=None, depth=0)
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                pass
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


@dataclass(frozen=True)
class RigHolder:
    """Who holds the rig, as the holder wrote it when it took the lock."""

    said: str  # "pid 4242 (bench plan-a, since 10:02:11)"
    purpose: str  # "bench plan-a", "switch to alt", "stop", ...

    @property
    def bench(self) -> bool:
        return self.purpose.startswith("bench ")


def rig_holder() -> RigHolder | None:
    """Who holds the rig now, or None when it is free: for asking before a question whose answer
    would be refused (the TUI's confirm), and for status to say a bench runs. A probe, not a
    promise: the switch itself still takes the lock."""
    lock = RigLock("probe")
    path = lock.path
    if not path.exists():
        return None
    try:
        fd = open_own(path, os.O_RDONLY)
    except (OSError, UnsafePath):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            purpose = str(json.loads(read_own(path, 4096) or b"{}").get("purpose") or "")
        except (OSError, ValueError, AttributeError):
            purpose = ""
        return RigHolder(lock.holder(), purpose)
    finally:
        os.close(fd)  # closing the descriptor drops the probe's own shared lock
    return None


def rig_held_by() -> str | None:
    """Who holds the rig now ("pid 4242 (bench plan-a, since 10:02:11)"), or None when it is free."""
    holder = rig_holder()
    return holder.said if holder else None
