"""Is this pid still the process it was? One answer for the whole tree: alive, not a zombie,
and, when its start time was noted, started then (a pid is reused once its process is gone)."""

from __future__ import annotations

import psutil

SAME_START = 1.0  # seconds: psutil's start times of one process agree to far better than this


def start_time(pid: int) -> float | None:
    """When `pid` started (epoch seconds); None when there is no such process."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def same_process(pid: int | None, started: float | None = None) -> bool:
    """`pid` runs (a zombie does not) and, when `started` is given, is the process that started then."""
    if pid is None:
        return False
    try:
        process = psutil.Process(pid)
        if started is not None and abs(process.create_time() - started) >= SAME_START:
            return False
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
