"""App-wide data messages. Samples coalesce: an unhandled older one is dropped."""

from __future__ import annotations

from textual.message import Message

from rigctl.gpu.model import RigSnapshot


class RigSampled(Message):
    def __init__(self, snapshot: RigSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RigSampled)


class PollFailed(Message):
    def __init__(self, source: str, error: str) -> None:
        super().__init__()
        self.source = source
        self.error = error


class SwitchProgress(Message):
    """One event of a switch running in a worker (phase, step, log line, failure)."""

    def __init__(self, event: object) -> None:
        super().__init__()
        self.event = event


class SwitchFinished(Message):
    def __init__(self, target: str, outcome: object | None, error: str | None = None) -> None:
        super().__init__()
        self.target = target
        self.outcome = outcome
        self.error = error


class LogLines(Message):
    """A batch of new server log lines; one message per read, never one per line."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines


class EngineSampled(Message):
    """The engine poll: EngineState (figures from /metrics) and the verified ServingStatus."""

    def __init__(self, state: object, serving: object) -> None:
        super().__init__()
        self.state = state
        self.serving = serving

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, EngineSampled)
