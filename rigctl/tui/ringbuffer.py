"""A fixed-size history for sparklines; snapshots are tuples so reactives see a new value."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable


class RingBuffer:
    def __init__(self, size: int, initial: Iterable[float] = ()) -> None:
        self._values: deque[float] = deque(initial, maxlen=size)

    def push(self, value: float | None) -> None:
        if value is not None:
            self._values.append(float(value))

    def snapshot(self) -> tuple[float, ...]:
        return tuple(self._values)

    def __len__(self) -> int:
        return len(self._values)
