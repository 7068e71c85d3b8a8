"""What a serving action runs with (the settings, the launcher, the profiles, the option tables,
the rig, the listener its events go to, the Ctrl-C it answers) and what it says as it goes. Apart
from the transaction, so whoever only holds a context (the TUI at its start, a CLI command that
may never switch) does not load the switch."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from rigctl.config import Settings

if TYPE_CHECKING:
    from rigctl.gpu.model import RigInfo
    from rigctl.gpu.sampler import RigSampler
    from rigctl.profiles.store import ProfileStore
    from rigctl.profiles.vllm_version import OptionTables
    from rigctl.serve.launchers import Launcher


# what a switch says as it goes: a step of it, a boot phase, a log line, the command it runs, a
# warning, the failure, and how it ended
EventKind = Literal["step", "phase", "line", "command", "warning", "failure", "outcome"]


@dataclass(frozen=True)
class Event:
    kind: EventKind
    text: str
    profile: str | None = None
    seconds: float | None = None


def to_both(first: Callable[[Event], None], second: Callable[[Event], None]) -> Callable[[Event], None]:
    """One listener that hands each event to `first`, then `second` (the caller's and the TUI's)."""

    def both(event: Event) -> None:
        first(event)
        second(event)

    return both


class Interrupt:
    """Ctrl-C during a switch. Before anything is touched it simply leaves; once a server
    has been stopped, the first Ctrl-C asks the boot to stop and the rollback to run, and
    a second one leaves at once."""

    def __init__(self) -> None:
        self.requested = threading.Event()  # set by the first Ctrl-C; cleared once the boot it stopped is gone
        self.touched = False  # a server has been stopped or started
        self.pressed = False

    def reset(self) -> None:
        """A new step begins (the bench's next switch): a Ctrl-C that stopped the last one must not
        stop this one. The same object, so whoever presses it (the CLI's SIGINT handler) still does."""
        self.requested.clear()
        self.touched = False
        self.pressed = False

    def press(self) -> bool:
        """Record one Ctrl-C; True when the caller should leave at once (KeyboardInterrupt)."""
        if not self.touched or self.pressed:
            return True
        self.pressed = True
        self.requested.set()
        return False


@dataclass
class ServeContext:
    settings: Settings
    launcher: Launcher
    store: ProfileStore
    tables: OptionTables  # the option table of the vLLM each profile's command runs
    rig: RigInfo | None
    sampler: RigSampler | None = None
    on_event: Callable[[Event], None] = field(default=lambda event: None)
    interrupt: Interrupt = field(default_factory=Interrupt)

    def say(self, kind: EventKind, text: str, profile: str | None = None) -> None:
        self.on_event(Event(kind, text, profile))
