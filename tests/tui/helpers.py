"""Driving the app in tests: timers off, one deterministic poll at a time."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot


async def poll(app: Any, pilot: Pilot[Any]) -> None:
    app.poll_now()
    await app.workers.wait_for_complete()
    await pilot.pause()
