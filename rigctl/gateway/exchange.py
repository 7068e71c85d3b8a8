"""The front door's side toward the apps: each connection's requests parsed as they come
(httptools), answered one at a time in order; each request an Exchange that ends once, as
finished (its answer relayed whole), cut (the door cut it, or vLLM's connection went under it),
gone (the app hung up first), refused (answered here: a bound, the hold's deadline, nothing
serving) or failed (vLLM did not answer: 502)."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Literal, Protocol, cast

import httptools

from rigctl.gateway import wire
from rigctl.gateway.answer import AnswerReader
from rigctl.gateway.hold import Hold, Ticket
from rigctl.gateway.upstream import EngineConnection

Outcome = Literal["finished", "cut", "gone", "refused", "failed"]
HELD_READ = 1024 * 1024  # of a held request's body, kept while it waits (its app's socket keeps the rest)
BODY_HIGH_WATER = 4 * 1024 * 1024  # a body not yet taken by vLLM: the app's reading pauses past this
HEAD_LIMIT = 64 * 1024  # a request line and headers larger than this are refused
BODY_KEPT = 16 * 1024 * 1024  # of a generation request's body, copied for the reuse count and the recording


class Door(Protocol):
    """What the apps' side asks of the door (rigctl.gateway.door.Gateway)."""

    hold: Hold
    apps: set[AppConnection]

    def begin(self, exchange: Exchange) -> None: ...

    def ended(self, exchange: Exchange) -> None: ...

    def upstream_failed(self, exchange: Exchange, why: str) -> None: ...

    def unreadable(self) -> None: ...


class Exchange:
    """One request of an app, from its head to its ending."""

    __slots__ = (
        "answered",
        "app",
        "arrived",
        "body",
        "buffered",
        "chunked",
        "client",
        "complete",
        "continue_wanted",
        "done",
        "engine",
        "headers",
        "keep_alive",
        "kept",
        "method",
        "outcome",
        "sent",
        "target",
        "ticket",
        "version",
    )

    def __init__(self, app: AppConnection, method: bytes, target: bytes, version: str, headers: list[tuple[bytes, bytes]]) -> None:
        self.app = app
        self.method, self.target, self.version, self.headers = method, target, version, headers
        self.arrived = time.monotonic()
        self.body: deque[bytes] = deque()
        self.buffered = 0
        self.complete = False  # the whole request has been received from the app
        self.engine: EngineConnection | None = None
        self.ticket: Ticket | None = None
        self.outcome: Outcome | None = None
        self.answered = False  # a byte of an answer reached the app
        self.sent = 0.0  # monotonic, when it was forwarded to vLLM
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.keep_alive = True
        names = {k.lower(): v for k, v in headers}
        self.chunked = b"chunked" in names.get(b"transfer-encoding", b"").lower()
        self.continue_wanted = names.get(b"expect", b"").lower() == b"100-continue"
        agent = names.get(b"user-agent", b"").split(b" ", 1)[0]
        self.client = agent.decode("latin-1")[:60] or "unnamed"
        self.kept = Kept() if method == b"POST" and target.split(b"?", 1)[0].endswith(b"completions") else None

    def feed(self, data: bytes) -> None:
        """Body bytes from the app: on to vLLM once forwarded, kept until then."""
        if self.outcome is not None:
            return  # answered already (refused, or vLLM answered before the body ended): dropped
        if self.kept is not None:
            self.kept.add(data)
        engine = self.engine
        if engine is not None:
            engine.send(wire.chunk(data) if self.chunked else data)
            return
        self.body.append(data)
        self.buffered += len(data)
        if self.ticket is not None:
            self.app.door.hold.grow(self.ticket, len(data))
        if self.buffered > (HELD_READ if self.ticket is not None else BODY_HIGH_WATER):
            self.app.pause_reading("body")

    def body_ended(self) -> None:
        self.complete = True
        if self.engine is not None and self.chunked and self.outcome is None:
            self.engine.send(wire.LAST_CHUNK)

    def no_answer(self, why: str) -> None:
        """vLLM took the request and closed without a byte of answer: the app gets the 502."""
        self.app.door.upstream_failed(self, why)

    def end(self, outcome: Outcome) -> None:
        if self.outcome is not None:
            return
        self.outcome = outcome
        self.app.door.ended(self)
        if not self.done.done():
            self.done.set_result(None)


class Kept:
    """What the door keeps of a generation request to say more than its outcome: a copy of its
    body (for the prefix-reuse count and the recording; dropped past BODY_KEPT) and, while
    recording, what its answer said."""

    __slots__ = ("answer", "body", "over", "status", "wall")

    def __init__(self) -> None:
        self.body = bytearray()
        self.over = False  # the body passed BODY_KEPT: not kept
        self.wall = time.time()
        self.status: int | None = None
        self.answer: AnswerReader | None = None

    def add(self, data: bytes) -> None:
        if self.over:
            return
        self.body += data
        if len(self.body) > BODY_KEPT:
            self.over, self.body = True, bytearray()


class AppConnection(asyncio.Protocol):
    """One connection of an app: requests parsed as they come, answered one at a time in order."""

    def __init__(self, door: Door) -> None:
        self.door = door
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.line: deque[Exchange] = deque()  # parsed (their heads at least), not yet answered
        self.reading: Exchange | None = None  # the one whose body is arriving
        self._target = bytearray()
        self._headers: list[tuple[bytes, bytes]] = []
        self._head_size = 0
        self.gone = False
        self._paused: set[str] = set()
        self.writing_paused = False

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport subclasses
        self.door.apps.add(self)

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._unreadable("an upgrade (a WebSocket, h2c) is not vLLM's API")
        except httptools.HttpParserError as exc:
            self._unreadable(f"not an HTTP request the front door can read: {exc}")

    def eof_received(self) -> bool:
        return False  # an app that closed its side has hung up: vLLM should stop generating for it

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone = True
        self.door.apps.discard(self)
        for exchange in list(self.line):
            if exchange.engine is not None:
                exchange.engine.abort()  # vLLM aborts a request whose connection closes
            if exchange.ticket is not None and not exchange.ticket.future.done():
                exchange.ticket.future.cancel()
            exchange.end("gone")

    def pause_writing(self) -> None:
        self.writing_paused = True
        current = self.line[0] if self.line else None
        if current is not None and current.engine is not None and current.engine.transport is not None:
            current.engine.transport.pause_reading()

    def resume_writing(self) -> None:
        self.writing_paused = False
        current = self.line[0] if self.line else None
        if current is not None and current.engine is not None and current.engine.transport is not None:
            current.engine.transport.resume_reading()

    # -- httptools callbacks
    def on_message_begin(self) -> None:
        self._target.clear()
        self._headers = []
        self._head_size = 0

    def on_url(self, url: bytes) -> None:
        self._target += url
        self._grow(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))
        self._grow(len(name) + len(value))

    def on_headers_complete(self) -> None:
        exchange = Exchange(self, self.parser.get_method(), bytes(self._target), self.parser.get_http_version(), self._headers)
        exchange.keep_alive = self.parser.should_keep_alive()
        self.reading = exchange
        self.line.append(exchange)
        if len(self.line) == 1:
            self.door.begin(exchange)

    def on_body(self, body: bytes) -> None:
        if self.reading is not None:
            self.reading.feed(body)

    def on_message_complete(self) -> None:
        if self.reading is not None:
            self.reading.body_ended()
            self.reading = None

    # -- for the door
    def _grow(self, size: int) -> None:
        self._head_size += size
        if self._head_size > HEAD_LIMIT:
            raise httptools.HttpParserError(f"a request head over {HEAD_LIMIT // 1024} KiB")

    def _unreadable(self, why: str) -> None:
        self.door.unreadable()
        self.write(wire.error_answer(400, why))
        self.close()

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.gone:
            self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def pause_reading(self, why: str) -> None:
        if self.transport is not None and not self._paused:
            self.transport.pause_reading()
        self._paused.add(why)

    def resume_reading(self, why: str) -> None:
        self._paused.discard(why)
        if self.transport is not None and not self._paused and not self.transport.is_closing():
            self.transport.resume_reading()

    def answered(self, exchange: Exchange) -> None:
        """The first exchange in line has ended: the next one, or the connection closes."""
        if self.line and self.line[0] is exchange:
            self.line.popleft()
        if self.gone:
            return
        if not exchange.keep_alive or exchange.outcome not in ("finished",) or not exchange.complete:
            self.close()  # a request whose body was not all read, or one answered here, ends its connection
            return
        if self.line:
            self.door.begin(self.line[0])
