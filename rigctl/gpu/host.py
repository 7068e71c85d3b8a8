"""The host beside the GPUs. Non-blocking: the CPU figure covers the interval since the
previous sample instead of sleeping for one.

On Linux it reads /proc/meminfo and /proc/stat itself, two small reads a second; psutil's
virtual_memory() and swap_memory() read four files and were most of a rig sample's CPU
beside vLLM (benchmarks/bench_tui.py). Elsewhere it asks psutil.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import psutil

from rigctl.gpu.model import HostSample

MEMINFO = "/proc/meminfo"
PROC_STAT = "/proc/stat"


def read_meminfo(path: str = MEMINFO) -> dict[str, int]:
    """Bytes per /proc/meminfo field (its values are in kB)."""
    out = {}
    with open(path, "rb") as handle:
        for line in handle.read().split(b"\n"):
            name, _, rest = line.partition(b":")
            value = rest.split()
            if value and value[0].isdigit():
                out[name.decode()] = int(value[0]) * (1024 if value[1:] == [b"kB"] else 1)
    return out


def read_cpu_times(path: str = PROC_STAT) -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs; guest time is already inside user time."""
    with open(path, "rb") as handle:
        fields = [int(v) for v in handle.readline().split()[1:9]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields)
    return total - idle, total


class HostSampler:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._cpu_count = psutil.cpu_count()
        self._proc = os.path.exists(MEMINFO) and os.path.exists(PROC_STAT)
        self._last_cpu = read_cpu_times() if self._proc else None
        if not self._proc:
            psutil.cpu_percent(interval=None)  # prime the interval counter
        self._primed = time.monotonic()

    def sample(self) -> HostSample:
        if self._proc:
            mem = read_meminfo()
            total, available = mem.get("MemTotal"), mem.get("MemAvailable")
            swap_total, swap_free = mem.get("SwapTotal"), mem.get("SwapFree")
            used = total - available if total is not None and available is not None else None
            swap_used = swap_total - swap_free if swap_total is not None and swap_free is not None else None
        else:
            vm, sw = psutil.virtual_memory(), psutil.swap_memory()
            total, available, used = vm.total, vm.available, vm.total - vm.available
            swap_total, swap_used = sw.total, sw.used
        try:
            load = os.getloadavg()
        except OSError:
            load = None
        return HostSample(
            timestamp=self._clock(),
            cpu_pct=self._cpu_pct(),
            cpu_count=self._cpu_count,
            load_avg=load,
            mem_total=total,
            mem_used=used,
            mem_available=available,
            swap_total=swap_total,
            swap_used=swap_used,
        )

    def _cpu_pct(self) -> float | None:
        if self._last_cpu is None:
            value: float | None = psutil.cpu_percent(interval=None)
        else:
            busy, total = read_cpu_times()
            last_busy, last_total = self._last_cpu
            self._last_cpu = (busy, total)
            value = 100.0 * (busy - last_busy) / (total - last_total) if total > last_total else None
        # Right after priming the interval is a few ms long: a number, but not a measurement.
        return None if time.monotonic() - self._primed < 0.2 else value
