"""SIGTERM and SIGINT for the long-running commands (watch, exporter), taken without a lock.

A handler that sets a threading.Event takes the Event's lock; a signal that lands while the main
thread holds that lock (inside Event.wait) deadlocks the process, and systemd then waits its
TimeoutStopSec and SIGKILLs it. Here the handler only sets a flag and writes a byte to a pipe
(both safe anywhere); a wait is a select() on the pipe."""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol


class Stop(Protocol):
    """What a service loop asks of its stop: threading.Event fits, and so does StopOnSignal."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


Handler = Callable[[int, FrameType | None], Any] | int | None


class StopOnSignal:
    def __init__(self, signals: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT)) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._flag = False
        self._previous: dict[signal.Signals, Handler] = {sig: signal.signal(sig, self._on_signal) for sig in signals}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.set()

    def set(self) -> None:
        self._flag = True
        try:
            os.write(self._write, b"\0")
        except (BlockingIOError, OSError):
            pass  # the pipe is full or closed: the flag alone is enough for the next look

    def is_set(self) -> bool:
        return self._flag

    def wait(self, timeout: float | None = None) -> bool:
        if not self._flag:
            try:
                select.select([self._read], [], [], timeout)
            except (OSError, ValueError):
                pass  # closed under the wait: the flag says what happened
        return self._flag

    def close(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        os.close(self._read)
        os.close(self._write)
