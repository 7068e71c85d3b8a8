"""The trace `rigctl capture` writes: created 0600 and never over another file (the owner's prompts
are in it), its header first, then a line per request appended as each answer ends, each line one
write so a capture that is killed leaves whole lines behind."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

from rigctl.errors import BadInputError
from rigctl.gateway.trace_lines import dumps_line, header


class TraceFile:
    def __init__(self, path: Path, upstream: str, started: float) -> None:
        self.path = path
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            self._fd = os.open(path, flags, 0o600)
        except FileExistsError:
            raise BadInputError(f"{path}: already exists; a capture never writes over a file (give another --out)") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise BadInputError(f"{path}: a symbolic link; a capture never writes through one") from None
            raise BadInputError(f"{path}: cannot create the trace: {exc.strerror or exc}") from None
        os.fchmod(self._fd, 0o600)  # whatever the umask: the owner's prompts are in it
        self._lock = threading.Lock()
        self.lines = 0
        self.write(header(upstream, started))
        self.lines = 0

    def write(self, entry: dict[str, Any]) -> None:
        data = dumps_line(entry).encode()
        with self._lock:
            written = 0
            while written < len(data):  # one write on a regular file; the loop only for a short one
                written += os.write(self._fd, data[written:])
            self.lines += 1

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                fd, self._fd = self._fd, -1
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
