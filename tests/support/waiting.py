"""Waiting in tests for what a process under test makes true: poll, and fail naming what never came."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Any


def wait_until(what: str, check: Callable[[], Any], proc: subprocess.Popen[str] | None = None, timeout: float = 120) -> Any:
    """Poll `check` until it is truthy (and return that); fail naming `what` at the deadline, or as
    soon as `proc` ended first (with what it printed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"{proc.args!r} ended (exit {proc.returncode}) before {what}:\n{out}")
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {timeout} s")
