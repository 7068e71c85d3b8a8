"""Driving the app in tests: timers off, one deterministic poll at a time."""

from __future__ import annotations

import io
import time
from typing import Any

from rich.console import Console
from textual.message import Message
from textual.notifications import Notification, Notify
from textual.pilot import Pilot
from textual.worker import WorkerCancelled, WorkerFailed

from rigctl.config import Settings
from rigctl.serve.context import ServeContext
from rigctl.tui.app import RigApp, make_app
from rigctl.tui.messages import Polled, SwitchFinished
from tests.support import present

ENDLESS = {"follow-log", "poll-loop"}  # workers that run while their widget is shown, by design


async def settle(app: Any, pilot: Pilot[Any]) -> None:
    """Wait for the app to go live (its serving context is made in a thread, then its first poll
    starts: on a loaded machine that can come after a key a test presses) and then for every worker
    that finishes by itself (not the log followers)."""
    deadline = time.monotonic() + 120
    while not getattr(app, "is_live", True) and time.monotonic() < deadline:
        await pilot.pause(0.02)
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
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system=None,
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


def app_for(ctx: ServeContext, settings: Settings | None = None) -> RigApp:
    """The app over a test's serving context, its GPUs sampled by the context's own sampler, no timers."""
    return make_app(present(ctx.sampler, "sampler"), ctx, poll_interval=None, settings=settings)


class Seen:
    """The app's message stream as a test sees it (`app.run_test(message_hook=seen)`): what it
    was told and what it said, read from the messages, never from the app's private state."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._mark = 0

    def mark(self) -> None:
        """From here on, for `since_mark` (before a key is pressed, say)."""
        self._mark = len(self.messages)

    def since_mark(self, kind: type[Message]) -> int:
        return sum(isinstance(m, kind) for m in self.messages[self._mark :])

    def __call__(self, message: Message) -> None:
        self.messages.append(message)

    @property
    def notifications(self) -> list[Notification]:
        return [m.notification for m in self.messages if isinstance(m, Notify)]

    def notified(self, text: str) -> bool:
        return any(text in n.message for n in self.notifications)

    def count(self, kind: type[Message]) -> int:
        return sum(isinstance(m, kind) for m in self.messages)


async def wait_for(pilot: Pilot[Any], what: str, done: Any, seconds: float = 120.0) -> None:
    """Until `done()` holds; an AssertionError naming `what` at the deadline, never a silent return.
    The deadline is generous: a loaded machine is slow, and the test asserts the outcome, not the time."""
    for _ in range(int(seconds / 0.05)):
        if done():
            await pilot.pause()
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{what}: not within {seconds:.0f} s")


async def wait_switch(pilot: Pilot[Any], seen: Seen, before: int = 0) -> None:
    """Until the app has said another serving action ended (a switch drains, boots and verifies)."""
    await wait_for(pilot, "the switch did not finish", lambda: seen.count(SwitchFinished) > before)


async def wait_polled(pilot: Pilot[Any], seen: Seen, before: int) -> None:
    await wait_for(pilot, "no poll came back", lambda: seen.count(Polled) > before, seconds=30)
