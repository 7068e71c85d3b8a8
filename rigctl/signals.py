"""SIGTERM and SIGINT for the long-running commands (watch, exporter), taken without a lock.

A handler that sets a threading.Event takes the Event's lock; a signal that lands while the main
thread holds that lock (inside Event.wait) deadlocks the process, and systemd then waits its
TimeoutStopSec and SIGKILLs it. Here the handler only sets a flag, and the wake-up is a byte the
interpreter's C-level handler writes to a pipe (signal.set_wakeup_fd); a wait is a select() on the
pipe. The byte must come from C: Python runs its handlers only between bytecodes, so a signal that
lands after the flag was read and before select() blocks would otherwise wake nothing (a SIGTERM
at that instant hung the exporter until SIGKILL)."""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
        self._previous_wakeup = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
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
        """Until a stop signal (or set()), or `timeout`. Another signal's wake-up byte (any signal
        with a Python handler writes one) is read and the wait goes on."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._flag:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            try:
                readable, _, _ = select.select([self._read], [], [], remaining)
            except (OSError, ValueError):
                break  # closed under the wait: the flag says what happened
            if readable:
                self._drain()  # the handler, run as select() returned, has set the flag if it was ours
        return self._flag

    def _drain(self) -> None:
        try:
            while os.read(self._read, 512):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        signal.set_wakeup_fd(self._previous_wakeup)
        os.close(self._read)
        os.close(self._write)


@contextmanager
def two_stage_interrupt(first: Callable[[], bool], *, sigterm: bool = False) -> Iterator[None]:
    """Ctrl-C in two stages, the way every long command of rigctl takes it: the first calls `first`,
    which starts an orderly stop (a rollback, the control put back) and says so, and returns False
    where there is nothing to stop in order; then, and at a second Ctrl-C, KeyboardInterrupt: leave
    now. `sigterm`: SIGTERM (systemd, a kill) counts as a Ctrl-C. The handlers in place before are
    put back at the end. `first` runs in the signal handler: it may set a flag, never take a lock."""
    pressed = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal pressed
        if pressed:
            raise KeyboardInterrupt
        pressed = True
        if not first():
            raise KeyboardInterrupt

    taken = (signal.SIGINT, signal.SIGTERM) if sigterm else (signal.SIGINT,)
    previous = {sig: signal.signal(sig, on_signal) for sig in taken}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
