"""A followed server log: a title and a view, fed by a TailReader (state/logtail.py) while shown.

Full-screen with scrollback on the log screen (ServerLog), read by a thread of its own; a
tail of what fits on a tall dashboard (TailView), read by the monitor in the same tick as
the GPUs, so the dashboard still repaints once a second.
"""

from __future__ import annotations

import re
from collections import deque
from typing import TYPE_CHECKING

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from textual.worker import get_current_worker

from rigctl.state.logfilter import LogFilter
from rigctl.state.logtail import TailReader
from rigctl.tui.messages import LogLines
from rigctl.tui.widgets.server_log import LogHighlighter, ServerLog
from rigctl.tui.widgets.tail_view import TailView
from rigctl.tui.worker_errors import SaysWorkerErrors

if TYPE_CHECKING:
    from rigctl.config import Settings

# Seconds between reads. Each read that finds lines scrolls and repaints the visible tail,
# so this sets the tail's CPU cost beside vLLM (benchmarks/bench_tui.py): a panel on the
# dashboard reads once a second, like everything else there; the log screen twice.
SCREEN_READ_EVERY = 0.5
CONTINUED = "  "  # a wrapped line's continuation, indented under its start


class LogTail(SaysWorkerErrors, Vertical):
    def __init__(
        self,
        settings: Settings,
        *,
        id: str,
        read_every: float | None,
        scrollback: int = 0,
        hide_own_polls: bool = False,
        tail_hides: re.Pattern[str] | None = None,
    ) -> None:
        """`scrollback`: lines kept for scrolling (a full log view); 0: a tail of what fits.
        `read_every`: seconds between reads by a thread of its own; None: while it follows,
        `reader` is there for the app's poll loop to read, and show() takes what it read."""
        super().__init__(id=id, classes="log-tail")
        self.settings = settings
        self.scrollback = scrollback
        self.read_every = read_every
        # a tail's reader drops these lines (a full view reads every line; its filter hides them)
        self.tail_hides = None if scrollback else tail_hides
        self.following = False
        self.reader: TailReader | None = None
        # a full view keeps every line it read, so a filter changed later shows what it hid
        self.lines: deque[str] | None = deque(maxlen=scrollback) if scrollback else None
        self.filter = LogFilter(show_own_polls=not hide_own_polls)  # a full view reads them all, hides them here
        self.title = "server log"

    def compose(self) -> ComposeResult:
        yield Static("server log", classes="log-title", markup=False)
        yield ServerLog(max_lines=self.scrollback) if self.scrollback else TailView()

    def follow(self, on: bool) -> None:
        """Start or stop the reader thread (screens call this as they show and hide)."""
        if on and not self.following:
            self.following = True
            if self.read_every is None:
                self.reader = TailReader(self.settings, self.tail_hides)  # closed by its reader
            else:
                self._follow(self.read_every)
        elif not on and self.following:
            self.following = False
            self.reader = None
            self.workers.cancel_group(self, "follow-log")

    @property
    def view(self) -> ServerLog | TailView:
        return self.query_one(ServerLog) if self.scrollback else self.query_one(TailView)

    def clear(self) -> None:
        self.view.clear()
        if self.lines is not None:
            self.lines.clear()

    def set_filter(self, wanted: LogFilter) -> None:
        """Show the kept lines again through `wanted` (a full view; a tail filters as it reads)."""
        self.filter = wanted
        view = self.view
        if isinstance(view, ServerLog) and isinstance(view.highlighter, LogHighlighter):
            view.highlighter.search = wanted.search
        if self.lines is not None:
            view.clear()
            view.write_lines(self._wrapped([line for line in self.lines if wanted.keep(line)]))
        self._retitle(self.title)

    def _write(self, lines: list[str]) -> None:
        if self.lines is not None:
            self.lines.extend(lines)
            lines = self._wrapped([line for line in lines if self.filter.keep(line)])
        if lines:
            self.view.write_lines(lines)

    def _wrapped(self, lines: list[str]) -> list[str]:
        """A full view's lines cut to its width, each continuation indented: vLLM's lines run to
        150 columns and more, and at 80 a line that ran past the edge hid its end (the tail on the
        dashboard ends a long line in "…"; the file keeps it whole)."""
        width = self.view.scrollable_content_region.width if self.is_mounted else 0
        if width < 20:
            return lines  # not laid out yet, or too narrow to wrap usefully: set_filter on resize redoes it
        out: list[str] = []
        for line in lines:
            if len(line) <= width:
                out.append(line)
                continue
            out.append(line[:width])
            rest = line[width:]
            while rest:
                out.append(CONTINUED + rest[: width - len(CONTINUED)])
                rest = rest[width - len(CONTINUED) :]
        return out

    def on_resize(self) -> None:
        if self.lines is not None and self.lines:
            self.set_filter(self.filter)  # wrapped again to the new width

    @work(thread=True, exclusive=True, group="follow-log", exit_on_error=False, description="Following the log")
    def _follow(self, every: float) -> None:
        worker = get_current_worker()
        reader = TailReader(self.settings, self.tail_hides)
        try:
            while not worker.is_cancelled:
                title, lines = reader.read()
                if title is not None:
                    self.app.call_from_thread(self._retitle, title)
                if lines:
                    self.post_message(LogLines(lines))
                worker.cancelled_event.wait(every)
        finally:
            reader.close()

    def show(self, reader: TailReader, title: str | None, lines: list[str]) -> None:
        """What the poll loop read with `reader`; dropped if the tail stopped following since."""
        if reader is not self.reader:
            return
        if title is not None:
            self.clear()  # a fresh reader starts again from the log's last lines
            self._retitle(title)
        self._write(lines)

    def _retitle(self, title: str) -> None:
        self.title = title
        if self.lines is not None:
            said = self.filter.describe()
        else:
            said = "answered requests: l" if self.tail_hides is not None else ""
        self.query_one(".log-title", Static).update(f"{title}  ({said})" if said else title)

    def on_log_lines(self, message: LogLines) -> None:
        message.stop()
        self._write(message.lines)
