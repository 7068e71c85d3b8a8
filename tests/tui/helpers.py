"""Driving the app in tests: timers off, one deterministic poll at a time."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from textual.pilot import Pilot
from textual.worker import WorkerCancelled, WorkerFailed

ENDLESS = {"follow-log", "poll-loop"}  # workers that run while their widget is shown, by design


async def settle(app: Any, pilot: Pilot[Any]) -> None:
    """Wait for every worker that finishes by itself (not the log followers)."""
    for worker in [w for w in app.workers if w.group not in ENDLESS]:
        try:
            await worker.wait()
        except (WorkerCancelled, WorkerFailed):
            pass  # a superseded (exclusive) worker, or one whose error the app shows itself
    await pilot.pause()


async def poll(app: Any, pilot: Pilot[Any]) -> None:
    app.poll_now()
    await settle(app, pilot)


def screen_text(app: Any) -> str:
    """What the terminal shows, as plain text lines (the same render Textual's screenshots use)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()
