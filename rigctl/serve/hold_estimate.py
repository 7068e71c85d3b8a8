"""How long the apps will wait through a switch, said before the owner confirms it (the TUI's
confirm, `switch --dry-run`): the drain (the streams in flight through the front door, each from
its tokens so far, its max_tokens and its pace; bounded by the drain's deadline) and then the
target's boot (the median of its last boots). An estimate, said as one: a request whose end
cannot be known (not streamed, no max_tokens, a client that bypasses the door) counts at the
drain's deadline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigctl import fmt
from rigctl.state.boots import BootEstimate


@dataclass(frozen=True)
class Flight:
    """One request in flight through the front door, as its status tells it."""

    client: str
    streamed: bool
    events: int  # of a streamed answer: its events so far, about one a token
    answering_s: float | None  # since its answer's first byte
    max_tokens: int | None

    def remaining_s(self) -> float | None:
        """Seconds until it ends at its pace so far; None when that cannot be known."""
        if not self.streamed or self.max_tokens is None or self.answering_s is None or self.events < 2 or self.answering_s <= 0:
            return None
        return max(0.0, (self.max_tokens - self.events) * self.answering_s / self.events)

    def describe(self) -> str:
        pace = f", {self.events / self.answering_s:.0f} tok/s" if self.answering_s else ""
        return f"{self.client} at {self.events:,} of {self.max_tokens or 0:,} tokens{pace}"


def flights_of(detail: object) -> tuple[Flight, ...]:
    """The door's `in_flight_detail`, read defensively (an older door says none)."""
    if not isinstance(detail, list):
        return ()
    out = []
    for item in detail:
        if not isinstance(item, dict):
            continue
        events, answering, limit = item.get("events"), item.get("answering_s"), item.get("max_tokens")
        out.append(
            Flight(
                client=str(item.get("client", "unnamed")),
                streamed=item.get("streamed") is True,
                events=events if isinstance(events, int) else 0,
                answering_s=float(answering) if isinstance(answering, (int, float)) else None,
                max_tokens=limit if isinstance(limit, int) else None,
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class HoldEstimate:
    target: str
    door: bool  # a front door holds the apps' requests (else they are refused for the boot)
    flights: tuple[Flight, ...]  # through the door
    running: int | None  # by vLLM's gauges, every client's (None: nothing serves, or it does not say)
    drain_s: float  # the drain's deadline (0: cut at the stop)
    boot: BootEstimate | None

    def _unknown(self) -> int:
        """Requests whose end cannot be estimated: not streamed, no max_tokens, or bypassing the door."""
        bypass = max(0, (self.running or 0) - len(self.flights))
        return bypass + sum(1 for f in self.flights if f.remaining_s() is None)

    def drain_estimate_s(self) -> float:
        if self.drain_s <= 0 or not (self.running or self.flights):
            return 0.0
        if self._unknown():
            return self.drain_s
        return min(self.drain_s, max((f.remaining_s() or 0.0) for f in self.flights))

    def seconds(self) -> float | None:
        """The apps' wait: the drain, then the boot (None: no boot of the target recorded)."""
        return None if self.boot is None else self.drain_estimate_s() + self.boot.seconds

    def _boot(self) -> str:
        if self.boot is None:
            return f"the boot (no boot of {self.target} recorded yet: no estimate)"
        median = f"its last {self.boot.boots} boots' median" if self.boot.boots > 1 else "its last boot"
        return f"the boot (~{fmt.seconds(self.boot.seconds)}, {median})"

    def lines(self) -> list[str]:
        running = self.running or len(self.flights)
        wait = self.seconds()
        about = f"~{fmt.seconds(wait)}" if wait is not None else "the drain and a boot of unknown length"
        apps = "the apps wait" if self.door else "the apps are refused for"
        if not running:
            return [f"no request running: {apps} {self._boot()}"]
        if self.drain_s <= 0:
            return [f"{running} request(s) running: cut at the stop (--drain 0); {apps} {self._boot()}"]
        if not self.door:
            gauges = f"{running} request(s) running (vLLM's gauges): the switch waits up to {self.drain_s:g} s for them"
            return [f"{gauges} (without the front door their ends cannot be estimated), then {apps} {self._boot()}"]
        known = [f for f in self.flights if f.remaining_s() is not None]
        drain = self.drain_estimate_s()
        parts = []
        if known:
            longest = max(known, key=lambda f: f.remaining_s() or 0.0)
            parts.append(
                f"{len(known)} stream(s) through the front door end in ~{fmt.seconds(drain)} (the longest: {longest.describe()})"
            )
        unknown = self._unknown()
        if unknown:
            parts.append(
                f"{unknown} request(s) whose end cannot be known (not streamed, no max_tokens, or bypassing the door): "
                f"up to the drain's {self.drain_s:g} s"
            )
        return [
            f"the apps will wait {about}: " + "; ".join(parts) + f", then {self._boot()}",
            f"cutting them now instead (--drain 0; Cut in the TUI): {apps} {self._boot()}, and each cut stream is told why",
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "apps_wait_s": self.seconds(),
            "drain_estimate_s": self.drain_estimate_s(),
            "boot_estimate_s": self.boot.seconds if self.boot else None,
            "front_door": self.door,
            "streams": [
                {"client": f.client, "events": f.events, "max_tokens": f.max_tokens, "remaining_s": f.remaining_s()}
                for f in self.flights
            ],
        }
