"""App-wide data messages. Samples coalesce: an unhandled older one is dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # the transaction loads when a switch is asked for, not with the app
    from rigctl.bench.live import LiveBench
    from rigctl.engine.poller import EngineState
    from rigctl.gpu.model import RigSnapshot
    from rigctl.serve.context import Event, ServeContext
    from rigctl.serve.switch import SwitchOutcome
    from rigctl.state.logtail import TailReader
    from rigctl.state.serving import ServingStatus


class Polled(Message):
    """One tick of the poll loop: the rig (None if it failed), the engine and what serves (None
    when no engine poll finished since the last tick), and what failed. Coalesces: a newer tick
    replaces an older one the app has not handled yet."""

    def __init__(
        self,
        rig: RigSnapshot | None,
        engine: EngineState | None,
        serving: ServingStatus | None,
        errors: list[tuple[str, str]],
        log: tuple[TailReader, str | None, list[str]] | None = None,
        bench: LiveBench | None = None,
    ) -> None:
        super().__init__()
        self.rig = rig
        self.bench = bench  # the bench running (or cut short), read with each engine poll
        self.engine = engine
        self.serving = serving
        self.errors = errors
        self.log = log  # (the dashboard tail's reader, a new title or None, new lines)

    def can_replace(self, message: Message) -> bool:
        return (
            isinstance(message, Polled)
            and not message.errors
            and message.engine is None
            and (message.log is None or (message.log[1] is None and not message.log[2]))
        )


class SwitchProgress(Message):
    """One event of a switch running in a worker (phase, step, log line, failure)."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class SwitchFinished(Message):
    def __init__(self, target: str, outcome: SwitchOutcome | None, error: str | None = None) -> None:
        super().__init__()
        self.target = target
        self.outcome = outcome
        self.error = error


class LogLines(Message):
    """A batch of new server log lines; one message per read, never one per line."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines


class SwitchRequested(Message):
    """A screen asks for a switch to `profile` (the app asks first, showing its cost); `detail`: the
    launch diff that stands in when the cost cannot be had. Screens post this, never call the app."""

    def __init__(self, profile: str, detail: str = "") -> None:
        super().__init__()
        self.profile = profile
        self.detail = detail


class ServingContextMade(Message):
    """The serving context, made in a thread after the first frame (None: it could not be, and
    `problem` says why)."""

    def __init__(self, made: ServeContext | None, problem: str | None) -> None:
        super().__init__()
        self.made = made
        self.problem = problem
