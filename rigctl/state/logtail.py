"""What the log of the server rigctl started says next: the reader behind the dashboard's
tail and the log screen. Follows the next server's log when the record names another one;
every line it hands out is redacted (a vLLM log quotes its own API key in `non-default args`).
Reads batch: at most BATCH lines each, so a flood shows its newest lines and the file keeps
the rest.
"""

from __future__ import annotations

import re

from rigctl.config import Settings
from rigctl.jsonio import DamagedFile
from rigctl.redact import redact_lines
from rigctl.state.logfollow import FileFollower
from rigctl.state.servers import LogFollower, view_for
from rigctl.state.statefiles import ServerRecord, read_record

BATCH = 2000
BACKLOG_BYTES = 256 * 1024  # where a viewer starts in a long log: far more than a screen of lines


class TailReader:
    """Not thread-safe: one reader thread at a time."""

    def __init__(self, settings: Settings, hide: re.Pattern[str] | None = None) -> None:
        """`hide`: the lines it never hands out (a tail's choice; state/logfilter.py)."""
        self.settings = settings
        self.hide = hide
        self._record: ServerRecord | None = None
        self._follower: LogFollower | None = None
        self._started = False
        self.broken = False  # set by a reader that hit an error: it reads no more

    def read(self) -> tuple[str | None, list[str]]:
        """(a new title when the followed log changed, else None; the new lines, at most BATCH)."""
        title = None
        try:
            current = read_record()
        except DamagedFile:
            current = None
        if current != self._record or not self._started:
            self._started = True
            self.close()
            self._record = current
            self._follower = view_for(current, self.settings).follower(current) if current else None
            if isinstance(self._follower, FileFollower):
                self._follower.skip_to_tail(BACKLOG_BYTES)
            title = (
                f"server log: {current.log_path or current.launcher}" if current else "server log: no server started by rigctl yet"
            )
        lines = self._follower.read_new() if self._follower else []
        if lines and self.hide is not None:
            lines = [line for line in lines if not self.hide.search(line)]
        return title, redact_lines(lines[-BATCH:])

    def close(self) -> None:
        if self._follower:
            self._follower.close()
            self._follower = None
