"""Following a server's log as it grows: a file (process launcher) or a command's output
(journalctl -f, docker logs -f). `read_new()` never blocks."""

from __future__ import annotations

import os
import queue
import subprocess
import threading
from pathlib import Path

from rigctl.files import open_own


class FileFollower:
    def __init__(self, path: Path | str, from_end: bool = False) -> None:
        self.path = Path(path)
        self._offset = self.path.stat().st_size if from_end and self.path.exists() else 0
        self._partial = ""
        self._mid_line = False  # the offset may be inside a line: drop up to the first newline

    def skip_to_tail(self, keep_bytes: int) -> None:
        """Start at most `keep_bytes` before the end: a viewer wants a long-running server's
        last lines, not to page through a gigabyte of history at a read a second."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size - self._offset > keep_bytes:
            self._offset, self._partial, self._mid_line = size - keep_bytes, "", True

    def read_new(self, limit: int = 1 << 20) -> list[str]:
        try:
            fd = open_own(self.path, os.O_RDONLY)  # a server log rigctl made: never read through a link
        except FileNotFoundError:
            return []
        try:
            data = os.pread(fd, limit, self._offset)
        finally:
            os.close(fd)
        if not data:
            return []
        self._offset += len(data)
        # tqdm redraws with \r; each redraw is its own line to a reader
        text = self._partial + data.decode(errors="replace").replace("\r", "\n")
        if self._mid_line:
            cut = text.find("\n")
            if cut < 0:
                return []  # still inside the first, cut line
            text, self._mid_line = text[cut + 1 :], False
        lines = text.split("\n")
        self._partial = lines.pop()
        return [line for line in lines if line]

    def close(self) -> None:
        """Nothing held open between reads."""


class CommandFollower:
    """Lines from a long-running command, read by a daemon thread into a bounded queue."""

    def __init__(self, argv: list[str], max_lines: int = 10_000) -> None:
        self.argv = argv
        self._lines: queue.Queue[str] = queue.Queue(max_lines)
        try:
            self._proc: subprocess.Popen[str] | None = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True
            )
        except OSError:
            self._proc = None
            return
        threading.Thread(target=self._pump, name="log-follow", daemon=True).start()

    def _pump(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                self._lines.put_nowait(line.rstrip("\n"))
            except queue.Full:
                pass  # a flood drops lines rather than memory

    def read_new(self, limit: int = 10_000) -> list[str]:
        out: list[str] = []
        while len(out) < limit:
            try:
                out.append(self._lines.get_nowait())
            except queue.Empty:
                break
        return out

    def close(self) -> None:
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
