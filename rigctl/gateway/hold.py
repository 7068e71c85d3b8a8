"""The hold: while a switch stops one engine and boots the next, new requests wait at the door in
arrival order instead of meeting a refused connection. Bounded by count, by the bytes the door
keeps for them, and by time; past a bound a request is answered 503 with Retry-After at once.
Pure asyncio bookkeeping: nothing here reads or writes a socket."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class HoldBounds:
    seconds: float = 600.0  # an app's own timeout is often 600 s (the openai SDK's default)
    requests: int = 1024
    bytes: int = 256 * 1024 * 1024  # what the door keeps of held bodies (each read up to HELD_READ)


@dataclass(eq=False)
class Ticket:
    """One held request: its place in line."""

    size: int
    arrived: float
    future: asyncio.Future[bool]
    released: float | None = None
    who: str = ""  # the client (gateway/judge.py): after a switch, its first request is released alone
    probe: bool = False  # released as its client's first: its answer's status line is read before the app gets a byte


@dataclass
class Hold:
    bounds: HoldBounds = field(default_factory=HoldBounds)
    clock: Callable[[], float] = time.monotonic
    active: bool = False
    since: float = 0.0
    line: deque[Ticket] = field(default_factory=deque)
    kept_bytes: int = 0
    held: int = 0
    longest: float = 0.0
    refused: int = 0

    def begin(self) -> None:
        self.active, self.since = True, self.clock()
        self.held, self.longest, self.refused = 0, 0.0, 0

    def full(self, size: int) -> str:
        """Why a request arriving now cannot wait ("" when it can)."""
        if len(self.line) >= self.bounds.requests:
            return f"{len(self.line)} requests are already held (the bound)"
        if self.kept_bytes + size > self.bounds.bytes:
            return f"the held requests' bodies reached {self.bounds.bytes // (1024 * 1024)} MiB (the bound)"
        return ""

    def over(self) -> bool:
        """The held bodies' bytes passed the bound: the door reads no more of them until the release."""
        return self.kept_bytes > self.bounds.bytes

    def enter(self, size: int, who: str = "", again: bool = False) -> Ticket:
        """A request joins the line; `again`: one the new server refused, back at the front (not
        counted twice), to go to the restored profile first."""
        ticket = Ticket(size, self.clock(), asyncio.get_running_loop().create_future(), who=who)
        if again:
            self.line.appendleft(ticket)
        else:
            self.line.append(ticket)
            self.held += 1
        self.kept_bytes += size
        return ticket

    def release(self, ticket: Ticket, probe: bool = False) -> None:
        """One request goes on while the hold stays (the apps judging a switch: gateway/judge.py)."""
        ticket.released, ticket.probe = self.clock(), probe
        if not ticket.future.done():
            ticket.future.set_result(True)

    async def wait(self, ticket: Ticket) -> bool:
        """True once released to an engine; False when its deadline came first (the caller
        answers 503). Cancelled (the app hung up): it leaves the line."""
        remaining = self.bounds.seconds - (self.clock() - ticket.arrived)
        try:
            return await asyncio.wait_for(asyncio.shield(ticket.future), max(0.0, remaining))
        except TimeoutError:
            self._leave(ticket)
            return False
        finally:
            self._leave(ticket)

    def _leave(self, ticket: Ticket) -> None:
        if ticket in self.line:
            self.line.remove(ticket)
            self.kept_bytes -= ticket.size
        waited = (ticket.released or self.clock()) - ticket.arrived
        self.longest = max(self.longest, waited)

    def grow(self, ticket: Ticket, size: int) -> None:
        """More of a held request's body was kept."""
        ticket.size += size
        self.kept_bytes += size

    def end(self, serving: bool) -> list[Ticket]:
        """The hold ends: the held requests in arrival order, each told whether something serves."""
        self.active = False
        released = list(self.line)
        now = self.clock()
        for ticket in released:
            ticket.released = now
            if not ticket.future.done():
                ticket.future.set_result(serving)
        return released
