"""What the apps saw of one hold at the front door (gateway/hold.py): the door reports it, and
every switch records it. Apart from the hold, so that a switch and `rigctl status` never load the
door's asyncio machinery."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rigctl import fmt


@dataclass(frozen=True)
class AppsSeen:
    """What the apps saw of one hold: part of every switch's record."""

    held: int = 0  # requests that waited at the door
    longest_s: float = 0.0  # the longest any of them waited
    window_s: float = 0.0  # how long the door held
    refused: int = 0  # answered 503: a bound, the deadline, or nothing serving at the end
    in_flight: int = 0  # forwarded and unanswered when the hold began: the drain
    finished: int = 0  # of those, seen to end
    cut: int = 0  # of those, cut (the drain's deadline, or the engine went under them)
    gone: int = 0  # of those, their app hung up before the answer ended
    bypass_cut: int = 0  # requests of clients that bypass the door, still running by vLLM's gauges at the stop

    def describe(self) -> str:
        held = f"{self.held} held" + (f" (longest {fmt.seconds(self.longest_s)})" if self.held else "")
        flight = f"{self.finished} in flight finished, {self.cut} cut" + (f", {self.gone} hung up" if self.gone else "")
        if self.bypass_cut:
            flight += f" (and {self.bypass_cut} of clients that bypass the door, by vLLM's gauges)"
        return f"apps: {held} over {fmt.seconds(self.window_s)}, {self.refused} refused, {flight}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
