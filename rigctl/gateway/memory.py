"""Giving the memory of large bodies back to the system (glibc's allocator; elsewhere, nothing to
do). A door holding hundreds of megabytes of bodies through a switch (the bound is [gateway]
hold_mb) should not keep them once they are forwarded. Measured with benchmarks/bench_door_bounds.py
(315 requests of 2 MiB held, 216 of them within the bound): RSS 29 MiB before, 299 MiB while held,
443 MiB after their release with the fixed threshold alone, 34 MiB with the trim too.

- The mmap threshold fixed at start: glibc raises it after each large block it frees, up to 32 MiB,
  so later bodies come from the heap, which it seldom returns; fixed (setting it stops the raising),
  each large block is its own mapping, unmapped when freed.
- malloc_trim once the door is idle after many MiB of bodies: the pieces read from sockets are
  smaller than the threshold and come from the heap; trimming hands its free pages back.
"""

from __future__ import annotations

import contextlib
import ctypes
from typing import Any

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD = 256 * 1024
TRIM_AFTER = 64 * 1024 * 1024  # bytes of bodies read since the last trim before the next, once idle


class MemoryReturn:
    def __init__(self) -> None:
        self.libc: Any = None
        with contextlib.suppress(OSError, AttributeError, TypeError):
            libc = ctypes.CDLL(None)  # the process's own symbols: its libc
            libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            libc.malloc_trim  # noqa: B018 - glibc's: musl has no malloc_trim, and then nothing is done here
            self.libc = libc
        self.trimmed_at = 0

    def after(self, body_bytes: int, idle: bool) -> bool:
        """Trim when idle (nothing in flight) and TRIM_AFTER bytes of bodies came since the last; True when it did."""
        if self.libc is None or not idle or body_bytes - self.trimmed_at < TRIM_AFTER:
            return False
        self.trimmed_at = body_bytes
        self.libc.malloc_trim(0)
        return True
