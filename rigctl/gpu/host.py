"""The host beside the GPUs, via psutil. Non-blocking: cpu_percent(None) reports the
interval since the previous call instead of sleeping for one."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import psutil

from rigctl.gpu.model import HostSample


class HostSampler:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        psutil.cpu_percent(interval=None)  # prime the interval counter
        self._primed = time.monotonic()

    def sample(self) -> HostSample:
        mem = psutil.virtual_memory()
        swap = psutil.swap_memory()
        try:
            load = os.getloadavg()
        except OSError:
            load = None
        return HostSample(
            timestamp=self._clock(),
            cpu_pct=self._cpu_pct(),
            cpu_count=psutil.cpu_count(),
            load_avg=load,
            mem_total=mem.total,
            mem_used=mem.total - mem.available,
            mem_available=mem.available,
            swap_total=swap.total,
            swap_used=swap.used,
        )

    def _cpu_pct(self) -> float | None:
        value = psutil.cpu_percent(interval=None)
        # Right after priming the interval is a few ms long: a number, but not a measurement.
        return None if time.monotonic() - self._primed < 0.2 else value
