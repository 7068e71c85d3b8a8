"""Is this pid still the process it was? One answer for the whole tree: alive, not a zombie,
and, when its start was noted, started then (a pid is reused once its process is gone).

A start is noted as what no clock step can change: the kernel's boot id and the process's
start in clock ticks since that boot (/proc/PID/stat, field 22). psutil's create_time is the
wall clock at boot plus those ticks, so NTP stepping the clock, a VM's clock correction or a
laptop's resume moves it, and a server that has not changed looks like another process.
create_time stays as the fallback where /proc is not there (and for records written before).
"""

from __future__ import annotations

import functools
from pathlib import Path

import psutil

SAME_START = 1.0  # seconds: psutil's start times of one process agree to far better than this


def start_time(pid: int) -> float | None:
    """When `pid` started (epoch seconds, for display and old records); None when there is no such process."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


@functools.lru_cache(maxsize=1)
def _kernel_boot() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def start_id(pid: int) -> str | None:
    """`pid`'s start as '<kernel boot id>:<ticks since boot>', unchanged by any clock step;
    None where /proc does not say (no such process, or not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read(4096)
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces and ')': split after the last
    fields = stat[stat.rfind(b")") + 2 :].split()
    if len(fields) < 20 or not fields[19].isdigit():
        return None
    return f"{_kernel_boot()}:{int(fields[19])}"


def same_process(pid: int | None, started: float | None = None, start: str | None = None) -> bool:
    """`pid` runs (a zombie does not) and is the process noted: by `start` (start_id) when it was
    noted and can be read now, else by `started` (create_time, within a second)."""
    if pid is None:
        return False
    try:
        process = psutil.Process(pid)
        now = start_id(pid) if start is not None else None
        if now is not None:
            if now != start:
                return False
        elif started is not None and abs(process.create_time() - started) >= SAME_START:
            return False
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
