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
