"""The front door's recording ([gateway] record = true, or `rigctl capture --out FILE`): every
generation request it forwards, in the trace format a bench replays (rigctl.bench.trace), so a
bench can replay the owner's own traffic.

Files of their own in the state dir (0700 folder, 0600 files: the owner's prompts are in them),
one per `max_bytes` or `max_age_s`, whichever comes first; past `keep_bytes` the oldest go. Each
request is one write of one whole line, so a door killed mid-write leaves whole lines behind.
A write that fails (a full disk) stops the recording, said once; the door keeps forwarding:
recording is never a reason to refuse a request. `only` (rigctl capture --out): one file of the
owner's naming instead, created at once (never over a file, never through a link), never rotated.
"""

from __future__ import annotations

import errno
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigctl import paths
from rigctl.errors import BadInputError
from rigctl.gateway.trace_lines import header

PREFIX = "door-"
SUFFIX = ".jsonl"


def recordings_dir() -> Path:
    return paths.state_dir() / "gateway-traces"


@dataclass(frozen=True)
class RecordBounds:
    max_bytes: int = 64 * 1024 * 1024  # a file this large is closed and the next one begun
    max_age_s: float = 24 * 3600.0  # and one this old
    keep_bytes: int = 2 * 1024 * 1024 * 1024  # all files together; past it the oldest are removed


def line_of(entry: dict[str, Any]) -> bytes:
    """One trace line; a lone surrogate an app sent is escaped rather than failing the write."""
    try:
        return (json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode()
    except UnicodeEncodeError:
        return (json.dumps(entry, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n").encode()


class Recording:
    def __init__(
        self,
        folder: Path,
        upstream: str,
        bounds: RecordBounds,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.time,
        only: Path | None = None,
        on_kept: Callable[[int], None] = lambda kept: None,
    ) -> None:
        """`on_kept`: told the count after each request kept (rigctl capture --max-requests)."""
        self.folder, self.upstream, self.bounds, self.say, self.clock = folder, upstream, bounds, say, clock
        self.only, self.on_kept = only, on_kept
        self.fd = -1
        self.path: Path | None = None
        self.started = 0.0
        self.size = 0
        self.kept = 0
        self.stopped = ""  # why recording stopped (empty: it records)
        if only is not None:
            self._open_only(only)  # refused now, before the door listens
        else:
            paths.ensure_private_dir(folder)  # a link planted there is refused, never followed

    def keep(self, arrived: float, entry: dict[str, Any]) -> None:
        """Write one request that arrived at `arrived` (wall-clock seconds)."""
        if self.stopped:
            return
        try:
            if self.only is None and (
                self.fd < 0 or self.size >= self.bounds.max_bytes or self.clock() - self.started >= self.bounds.max_age_s
            ):
                self._next_file()
            data = line_of({"t": round(max(0.0, arrived - self.started), 6), **entry})
            self._write(data)
            self.kept += 1
        except OSError as exc:
            self._stop(f"{self.path or self.folder}: {exc.strerror or exc}")
            return
        self.on_kept(self.kept)

    def _open_only(self, path: Path) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            self.fd = os.open(path, flags, 0o600)
        except FileExistsError:
            raise BadInputError(f"{path}: already exists; a recording never writes over a file (give another --out)") from None
        except OSError as exc:
            raise BadInputError(f"{path}: cannot create the trace: {exc.strerror or exc}") from None
        os.fchmod(self.fd, 0o600)  # whatever the umask: the owner's prompts are in it
        self.path, self.size, self.started = path, 0, self.clock()
        try:
            self._write(line_of(header(self.upstream, self.started)))
        except OSError as exc:
            self._close_file()
            raise BadInputError(f"{path}: cannot write the trace: {exc.strerror or exc}") from None

    def _write(self, data: bytes) -> None:
        written = os.write(self.fd, data)
        if written < len(data):
            # a short write on a regular file is a full disk: the partial line is taken back so
            # that the file keeps whole lines only
            os.ftruncate(self.fd, self.size)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.size += written

    def _next_file(self) -> None:
        self._close_file()
        self.started = self.clock()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(self.started))
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        for n in range(100):
            path = self.folder / f"{PREFIX}{stamp}{f'-{n}' if n else ''}{SUFFIX}"
            try:
                self.fd = os.open(path, flags, 0o600)
                break
            except FileExistsError:
                continue
        else:
            raise OSError(errno.EEXIST, "no free file name")
        self.path, self.size = path, 0
        os.fchmod(self.fd, 0o600)
        self._write(line_of(header(self.upstream, self.started)))
        self._retain()

    def _retain(self) -> None:
        """The oldest files removed until all of them fit keep_bytes (the one being written stays)."""
        files = sorted(p for p in self.folder.glob(f"{PREFIX}*{SUFFIX}") if p != self.path)
        sizes = {p: p.stat().st_size for p in files}
        total = sum(sizes.values()) + self.size
        for old in files:
            if total <= self.bounds.keep_bytes:
                break
            old.unlink(missing_ok=True)
            total -= sizes[old]

    def _stop(self, why: str) -> None:
        self.stopped = why
        self.say(f"recording stopped after {self.kept} request(s) ({why}); the door keeps forwarding")
        self._close_file()

    def _close_file(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            try:
                os.fsync(fd)
            except OSError:
                pass
            finally:
                os.close(fd)

    def close(self) -> None:
        self._close_file()


def recorded_files(folder: Path | None = None) -> list[Path]:
    """The recording's files, oldest first."""
    folder = folder or recordings_dir()
    return sorted(folder.glob(f"{PREFIX}*{SUFFIX}")) if folder.is_dir() else []
