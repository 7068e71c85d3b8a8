"""The host line: psutil's figures, and a CPU percentage over the interval between samples."""

from __future__ import annotations

import time

import psutil

from rigctl.gpu.host import HostSampler


def test_memory_and_swap_match_psutil() -> None:
    sample = HostSampler().sample()
    vm, sw = psutil.virtual_memory(), psutil.swap_memory()
    assert sample.mem_total == vm.total and sample.swap_total == sw.total
    assert sample.mem_used is not None and abs(sample.mem_used - (vm.total - vm.available)) < 64 * 2**20
    assert sample.swap_used is not None and abs(sample.swap_used - sw.used) < 64 * 2**20
    assert sample.cpu_count == psutil.cpu_count()


def test_cpu_percent_covers_the_interval_since_the_last_sample() -> None:
    sampler = HostSampler()
    assert sampler.sample().cpu_pct is None  # primed a moment ago: no interval to speak of yet
    end = time.monotonic() + 0.4
    while time.monotonic() < end:  # keep one CPU busy
        pass
    busy = sampler.sample().cpu_pct
    assert busy is not None and 100 / (psutil.cpu_count() or 1) * 0.5 <= busy <= 100.0
