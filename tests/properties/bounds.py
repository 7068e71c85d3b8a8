"""The property every reader of outside input keeps: a value, or one RigctlError line, never
another exception, and never more memory than a small multiple of its input."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import TypeVar

from rigctl.errors import RigctlError

T = TypeVar("T")
MEMORY_LIMIT = 64 * 1024 * 1024  # the inputs are at most tens of KB: any blow-up shows far below this


def value_or_one_line(read: Callable[[], T], where: str | None = None) -> T | RigctlError:
    """`read()`'s value, or the RigctlError it raised, whose message must be one line (a profile or
    a plan says every mistake at once: one line each, each naming `where`, the file); any other
    exception fails the property (hypothesis then shrinks the input that raised it)."""
    tracemalloc.start()
    try:
        try:
            return read()
        except RigctlError as exc:
            lines = str(exc).strip().splitlines()
            assert lines and "Traceback" not in str(exc), str(exc)
            if where is None:
                assert len(lines) == 1, str(exc)
            else:
                assert all(where in line for line in lines), str(exc)
            return exc
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < MEMORY_LIMIT, f"{peak / 2**20:.0f} MiB for one small input"
