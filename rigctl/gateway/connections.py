"""The apps' connections the door keeps, and the clocks on them (rigctl.gateway.bounds): one sweep
a second closes a connection past its head, idle or body timeout; at the cap, the connection
that has waited longest with no request in it (idle between requests, or never past half a head)
is closed to admit the new one, so silent connections can fill the door's slots but never keep an
app out. A connection with a request in it is never closed for another's sake."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from rigctl.gateway import wire
from rigctl.gateway.bounds import LINGER_MAX_S, LINGER_S, ConnectionBounds, Waiting


class AppConnection(Protocol):
    """An app's connection as its clocks see it (rigctl.gateway.exchange.AppConnection)."""

    since: float
    lingering_since: float

    @property
    def waiting(self) -> Waiting: ...

    @property
    def paused(self) -> bool: ...

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...

    def expire(self, limit_s: float) -> None: ...


@dataclass
class Closed:
    """Since the door opened: the connections it closed, by why."""

    at_cap: int = 0  # the oldest with no request in it, to admit a new one
    refused_at_cap: int = 0  # new ones turned away: every kept connection had a request in it
    head_timeout: int = 0
    idle_timeout: int = 0
    body_timeout: int = 0

    def to_json(self) -> dict[str, int]:
        return dict(vars(self))


@dataclass
class Connections:
    bounds: ConnectionBounds
    cap: int
    clock: Callable[[], float] = time.monotonic
    open: set[AppConnection] = field(default_factory=set)
    closed: Closed = field(default_factory=Closed)
    # the connections with no request in them, in the order they came to be so: the first is the
    # one that gives way at the cap
    _idle: dict[AppConnection, None] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.open)

    def admit(self, app: AppConnection) -> None:
        self.open.add(app)
        self._idle[app] = None
        if len(self.open) <= self.cap:
            return
        victim = next((c for c in self._idle if c is not app), None)
        if victim is not None:
            self.closed.at_cap += 1
            self.forget(victim)
            victim.close()
            return
        self.closed.refused_at_cap += 1
        self.forget(app)
        app.write(
            wire.error_answer(
                503, f"rigctl gateway: all {self.cap} connections the door keeps are busy ([gateway] max_connections)", 1
            )
        )
        app.close()

    def busy(self, app: AppConnection) -> None:
        """A request arrived on it: it no longer gives way at the cap."""
        self._idle.pop(app, None)

    def idle(self, app: AppConnection) -> None:
        """Its requests are answered: it waits for the next, and is the newest to give way."""
        if app in self.open:
            self._idle.pop(app, None)
            self._idle[app] = None

    def forget(self, app: AppConnection) -> None:
        self.open.discard(app)
        self._idle.pop(app, None)

    def idle_ones(self) -> list[AppConnection]:
        return list(self._idle)

    def sweep(self) -> None:
        """Close each connection past the timeout of what the door waits for on it."""
        now = self.clock()
        limits = {"head": self.bounds.header_s, "idle": self.bounds.keepalive_s, "body": self.bounds.body_s}
        for app in list(self.open):
            if app.waiting == "linger":
                if now - app.since > LINGER_S or now - app.lingering_since > LINGER_MAX_S:
                    self.forget(app)
                    app.close()
                continue
            if app.waiting == "busy" or app.paused:
                continue
            limit = limits[app.waiting]
            if limit > 0 and now - app.since > limit:
                setattr(self.closed, f"{app.waiting}_timeout", getattr(self.closed, f"{app.waiting}_timeout") + 1)
                app.expire(limit)  # closed, or lingering (then closed by a later sweep)
