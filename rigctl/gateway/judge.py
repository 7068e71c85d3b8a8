"""The apps judge a switch: a profile that serves another key, another model name, no tool parser
or a shorter context passes rigctl's own verification and breaks every app. The door knows each
client's outcomes (by its User-Agent's product and a fingerprint of its key, never the key); after
a switch, the first request of each client the door has seen answered 2xx is released alone, and
its status line read before a byte reaches the app. A status that client never got before (a
401, a 404 for the model, a 400 for tools or a context it used) is the new server refusing the
apps: the answer is kept from the app, the request waits to be sent again to the restored
profile (nothing was generated: an error status, no token), and the switch rolls back. A
generation is never sent twice: only an error answer is withheld."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CLIENTS = 512  # clients remembered at once (the least recently seen go first)
RECENT_S = 600.0  # a client answered 2xx this recently is awaited after a switch, held request or not
JUDGED = frozenset(
    {400, 401, 403, 404, 405, 415, 422}
)  # what a profile's change can make the apps get; never a 408, 413, 429 or 5xx


def client_of(product: str, authorization: bytes) -> str:
    """A client as the door tells them apart: its User-Agent's product and a fingerprint of its key."""
    if not authorization:
        return f"{product} (no key)"
    return f"{product} (key {hashlib.sha256(authorization).hexdigest()[:6]})"


@dataclass
class Outcomes:
    statuses: dict[int, float] = field(default_factory=dict)  # a status it got -> when (monotonic)
    last_ok: float = 0.0


class ClientOutcomes:
    """What each client's generation requests were answered, most recently seen last."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.clients: OrderedDict[str, Outcomes] = OrderedDict()

    def note(self, who: str, status: int) -> None:
        seen = self.clients.pop(who, None) or Outcomes()
        now = self.clock()
        seen.statuses[status] = now
        if 200 <= status < 300:
            seen.last_ok = now
        self.clients[who] = seen
        while len(self.clients) > CLIENTS:
            self.clients.popitem(last=False)

    def known(self, who: str) -> bool:
        seen = self.clients.get(who)
        return seen is not None and seen.last_ok > 0

    def refused(self, who: str, status: int) -> bool:
        """A status a client answered 2xx before never got: the new server refuses it."""
        seen = self.clients.get(who)
        return seen is not None and seen.last_ok > 0 and status in JUDGED and status not in seen.statuses

    def recent(self) -> set[str]:
        now = self.clock()
        return {who for who, seen in self.clients.items() if seen.last_ok and now - seen.last_ok <= RECENT_S}


@dataclass
class Refusal:
    status: int
    message: str
    withheld: int = 1  # its requests kept from the new server: the one judged and those held behind it


@dataclass
class Probation:
    """One switch's judgement by the apps: the clients awaited, what each first answer said."""

    awaited: set[str]  # clients whose first answer decides
    deadline: float  # monotonic: awaited clients that sent nothing by then are not judged
    probing: set[str] = field(default_factory=set)  # their first request is out, its status line not yet read
    pending: dict[str, Any] = field(default_factory=dict)  # the probes out, by client (exchange.Exchange)
    accepted: set[str] = field(default_factory=set)
    refusals: dict[str, Refusal] = field(default_factory=dict)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def settled(self) -> bool:
        return not (self.awaited - self.accepted - set(self.refusals))

    def check(self, now: float) -> None:
        if self.settled() or now >= self.deadline or self.refusals:
            self.done.set()

    def to_json(self) -> dict[str, Any]:
        return {
            "awaited": sorted(self.awaited),
            "accepted": sorted(self.accepted),
            "refused": [
                {"client": who, "status": r.status, "message": r.message, "withheld": r.withheld}
                for who, r in self.refusals.items()
            ],
            "unanswered": sorted(self.awaited - self.accepted - set(self.refusals)),
        }


def describe_refusals(refused: list[dict[str, Any]]) -> str:
    """'401 for openai-python (key 3f2a1b), 3 requests': what the switch's output and journal say."""
    parts = []
    for item in refused:
        count = item.get("withheld", 1)
        parts.append(f"{item.get('status')} for {item.get('client')}" + (f", {count} requests" if count != 1 else ""))
    return "the apps' requests were refused (" + "; ".join(parts) + ")"
