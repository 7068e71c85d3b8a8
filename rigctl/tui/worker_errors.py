"""One handler for every worker's failure: the app and each screen or widget that starts workers
takes this mixin, so an exception in a loader is a notification naming what failed and a line in
the TUI's error log (with its traceback), never an empty table that says nothing.

Textual posts `Worker.StateChanged` to the node that started the worker and does not bubble it, so
the handler has to be on every such node; a mixin keeps it one function. The workers run with
`exit_on_error=False`: one failed read must not take the whole TUI down."""

from __future__ import annotations

import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from textual.app import App
from textual.worker import Worker, WorkerState

from rigctl.errors import RigctlError, one_line
from rigctl.paths import ensure_private_dir, state_dir
from rigctl.redact import redact_text

ERROR_LOG = "tui-errors.log"
MAX_LOG_BYTES = 1 << 20  # the log is for a bug report, not an archive: past this it starts over


def error_log_path() -> Path:
    return state_dir() / ERROR_LOG


def worker_failed_text(worker: Worker[object]) -> str:
    """The notification's one line: what was being done, and the error's own words."""
    error = worker.error
    what = worker.description or worker.name or "a background task"
    if error is None:
        cause = "no error was kept"
    elif isinstance(error, RigctlError):  # already one line fit to show, naming its file
        cause = str(error)
    else:
        cause = f"{type(error).__name__}: {error}"
    cause = one_line(cause)
    return redact_text(f"{what} failed: {cause}")


def log_worker_error(worker: Worker[object], path: Path | None = None) -> Path | None:
    """Append the failure with its traceback; None where the state dir cannot be written (the
    notification still says it)."""
    path = path or error_log_path()
    error = worker.error
    trace = "".join(traceback.format_exception(error)) if error is not None else "no error was kept\n"
    entry = f"{datetime.now(UTC).isoformat(timespec='seconds')} {worker_failed_text(worker)}\n{redact_text(trace)}\n"
    try:
        ensure_private_dir(path.parent)
        mode = "w" if path.exists() and path.stat().st_size > MAX_LOG_BYTES else "a"
        with path.open(mode, encoding="utf-8") as log:
            log.write(entry)
    except OSError:
        return None
    return path


class _Node(Protocol):
    @property
    def app(self) -> App[Any]: ...


class SaysWorkerErrors:
    """Mixed into an App, Screen or Widget: its workers' errors are said, once each."""

    def on_worker_state_changed(self: _Node, event: Worker.StateChanged) -> None:
        if event.state is not WorkerState.ERROR:
            return
        logged = log_worker_error(event.worker)
        where = f" (details: {logged})" if logged is not None else ""
        self.app.notify(worker_failed_text(event.worker) + where, severity="error", timeout=20, markup=False)
