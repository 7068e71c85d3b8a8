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
from rigctl.gateway.bounds import PIPELINE_DEPTH, Waiting
from rigctl.gateway.connections import Connections
from rigctl.gateway.hold import Hold, Ticket
from rigctl.gateway.judge import client_of
from rigctl.gateway.upstream import EngineConnection

Outcome = Literal["finished", "cut", "gone", "refused", "failed"]
HELD_READ = 1024 * 1024  # of a held request's body, kept while it waits (its app's socket keeps the rest)
BODY_HIGH_WATER = 4 * 1024 * 1024  # a body not yet taken by vLLM: the app's reading pauses past this
HEAD_LIMIT = 64 * 1024  # a request line and headers larger than this are refused
BODY_KEPT = 16 * 1024 * 1024  # of a generation request's body, copied for the reuse count and the recording


class Door(Protocol):
    """What the apps' side asks of the door (rigctl.gateway.door.Gateway)."""

    hold: Hold
    connections: Connections
    stopping: bool
    body_bytes: int

    def key_refused(self, headers: list[tuple[bytes, bytes]]) -> bool: ...

    def judge(self, exchange: Exchange, status: int) -> bool: ...

    def requeue(self, exchange: Exchange, message: str) -> None: ...

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
        "probe",
        "requeued",
        "resend",
        "sent",
        "status",
        "target",
        "ticket",
        "unwelcome",
        "version",
        "who",
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
        self.unwelcome = False  # without the door's API key: answered 401, its body never read
        names = {k.lower(): v for k, v in headers}
        self.chunked = b"chunked" in names.get(b"transfer-encoding", b"").lower()
        self.continue_wanted = names.get(b"expect", b"").lower() == b"100-continue"
        agent = names.get(b"user-agent", b"").split(b" ", 1)[0]
        self.client = agent.decode("latin-1")[:60] or "unnamed"
        self.kept = Kept() if method == b"POST" and target.split(b"?", 1)[0].endswith(b"completions") else None
        # the apps' judgement of a switch (gateway/judge.py): generation requests only
        self.who = client_of(self.client, names.get(b"authorization", b"")) if self.kept is not None else ""
        self.status: int | None = None  # its answer's, once its head is read
        self.probe = False  # its client's first after a switch: its answer is withheld until its status is judged
        self.resend: list[bytes] = []  # a probe's body as sent, to send again should the new server refuse it
        self.requeued = False

    def feed(self, data: bytes) -> None:
        """Body bytes from the app: on to vLLM once forwarded, kept until then."""
        if self.outcome is not None:
            return  # answered already (refused, or vLLM answered before the body ended): dropped
        self.app.door.body_bytes += len(data)
        if self.kept is not None:
            self.kept.add(data)
        engine = self.engine
        if engine is not None:
            engine.send(wire.chunk(data) if self.chunked else data)
            if self.probe:
                self.resend.append(data)
            return
        self.body.append(data)
        self.buffered += len(data)
        hold = self.app.door.hold
        if self.ticket is not None:
            hold.grow(self.ticket, len(data))
            if self.buffered > HELD_READ or hold.over():
                self.app.pause_reading("body")  # the rest waits in the app's socket until the release
        elif self.buffered > BODY_HIGH_WATER:
            self.app.pause_reading("body")

    def body_ended(self) -> None:
        self.complete = True
        if self.engine is not None and self.chunked and self.outcome is None:
            self.engine.send(wire.LAST_CHUNK)

    def no_answer(self, why: str) -> None:
        """vLLM took the request and closed without a byte of answer: the app gets the 502."""
        self.app.door.upstream_failed(self, why)

    def judge(self, status: int) -> bool:
        """A probe's status line: True when its answer may go to the app."""
        return self.app.door.judge(self, status)

    def requeue(self, message: str = "") -> None:
        """The new server refused this probe before generating anything: back into the hold, its
        body as it was, to be sent to the restored profile (its answer never reached the app)."""
        self.engine = None
        self.answered = self.probe = False
        self.status = None
        self.body = deque(self.resend)
        self.buffered = sum(len(part) for part in self.resend)
        self.resend = []
        if self.kept is not None:
            self.kept.status, self.kept.answer = None, None
        self.requeued = True
        self.app.door.requeue(self, message)
        if not self.done.done():
            self.done.set_result(None)

    def end(self, outcome: Outcome) -> None:
        if self.outcome is not None:
            return
        self.outcome = outcome
        self.app.door.ended(self)
        if not self.done.done():
            self.done.set_result(None)


class Kept:
    """What the door keeps of a generation request to say more than its outcome: its body (for the
    prefix-reuse count and the recording; dropped past BODY_KEPT) and, while recording, what its
    answer said. The body's pieces are the very bytes objects the door reads and forwards, never a
    copy: a held body is kept once, as [gateway] hold_mb counts it."""

    __slots__ = ("answer", "over", "parts", "size", "status", "wall")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.over = False  # the body passed BODY_KEPT: not kept
        self.wall = time.time()
        self.status: int | None = None
        self.answer: AnswerReader | None = None

    def add(self, data: bytes) -> None:
        if self.over:
            return
        self.parts.append(data)
        self.size += len(data)
        if self.size > BODY_KEPT:
            self.over, self.parts, self.size = True, [], 0

    def body(self) -> bytes:
        return b"".join(self.parts)


class AppConnection(asyncio.Protocol):
    """One connection of an app: requests parsed as they come, answered one at a time in order.
    A second request parsed while the first is answered pauses the reading (pipelining); past
    PIPELINE_DEPTH parsed ahead, the rest is dropped and the connection closes once those are
    answered (RFC 9112 9.3.2: a pipelining client sends again what was left unanswered)."""

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
        self.waiting: Waiting = "head"
        self.since = time.monotonic()  # when what it waits for began (a body: its last read)
        self.overflow = False  # past PIPELINE_DEPTH: what follows is dropped, and it closes after its line
        self.head_began = False  # a byte of the next request's head arrived
        self.lingering_since = 0.0

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport subclasses
        self.door.connections.admit(self)

    def data_received(self, data: bytes) -> None:
        if self.waiting == "linger":
            self.since = time.monotonic()
            return
        if self.waiting == "idle":
            self._wait("head")  # the next request began: its head has header_s
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
        self.door.connections.forget(self)
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
        self.head_began = True
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
        self.head_began = False
        if self.overflow or self.gone:
            self.reading = None  # past the pipeline's depth: dropped, body and all
            return
        exchange = Exchange(self, self.parser.get_method(), bytes(self._target), self.parser.get_http_version(), self._headers)
        exchange.keep_alive = self.parser.should_keep_alive()
        self.reading = exchange
        self.line.append(exchange)
        self.door.connections.busy(self)
        self._wait("body")
        if self.door.key_refused(exchange.headers):
            exchange.unwelcome = True  # answered 401 in its turn; not a byte of its body is read
            self.pause_reading("refused")
        if len(self.line) == 1:
            self.door.begin(exchange)
            return
        self.pause_reading("pipeline")  # one answered at a time: what follows waits in the socket
        if len(self.line) >= PIPELINE_DEPTH:
            self.overflow = True

    def on_body(self, body: bytes) -> None:
        if self.reading is not None:
            self.since = time.monotonic()
            self.reading.feed(body)

    def on_message_complete(self) -> None:
        if self.reading is not None:
            self.reading.body_ended()
            self.reading = None
            self._wait("busy")
        if self.overflow:
            self.pause_reading("overflow")  # for good: it closes once its line is answered

    # -- for the door
    def _wait(self, what: Waiting) -> None:
        self.waiting, self.since = what, time.monotonic()

    def _grow(self, size: int) -> None:
        self._head_size += size
        if self._head_size > HEAD_LIMIT:
            raise httptools.HttpParserError(f"a request head over {HEAD_LIMIT // 1024} KiB")

    def _unreadable(self, why: str) -> None:
        self.door.unreadable()
        self.write(wire.error_answer(400, why))
        self.linger()

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.gone:
            self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def linger(self) -> None:
        """Close once what was written is sent, reading and dropping what the app still sends for a
        while (the sweep ends it: LINGER_S without a byte, or LINGER_MAX_S in all)."""
        transport = self.transport
        if transport is None or transport.is_closing() or self.gone or self.waiting == "linger":
            return
        if not transport.can_write_eof():
            self.close()
            return
        transport.write_eof()
        self.overflow = True  # whatever is parsed from here on is dropped
        self.lingering_since = time.monotonic()
        self._wait("linger")
        self.door.connections.idle(self)
        self._paused.clear()
        transport.resume_reading()

    def pause_reading(self, why: str) -> None:
        if self.transport is not None and not self._paused:
            self.transport.pause_reading()
        self._paused.add(why)

    def resume_reading(self, why: str) -> None:
        if why not in self._paused:
            return
        self._paused.discard(why)
        if self.transport is not None and not self._paused and not self.transport.is_closing():
            self.since = time.monotonic()  # a body's clock counts the app's pauses, never the door's
            self.transport.resume_reading()

    @property
    def paused(self) -> bool:
        """The door stopped reading it: no clock of the app's runs."""
        return bool(self._paused)

    def answered(self, exchange: Exchange) -> None:
        """The first exchange in line has ended: the next one, or the connection closes."""
        if self.line and self.line[0] is exchange:
            self.line.popleft()
        if self.gone:
            return
        if not exchange.keep_alive or exchange.outcome not in ("finished",) or not exchange.complete:
            self.linger()  # a request whose body was not all read, or one answered here, ends its connection
            return
        if self.line:
            self.door.begin(self.line[0])
            if len(self.line) == 1:
                self.resume_reading("pipeline")  # only the last in line can still be reading its body
            return
        if self.overflow or self.door.stopping:
            self.linger()  # what it sent past the pipeline's depth was dropped; a stopping door admits nothing
            return
        self._wait("head" if self.head_began else "idle")
        self.door.connections.idle(self)
        self.resume_reading("pipeline")

    def expire(self, limit_s: float) -> None:
        """Past the timeout of what the door waited for: a head or a body is answered 408 (an idle
        connection is only closed), and the connection closes."""
        if self.waiting == "body" and self.reading is not None:
            exchange = self.reading
            if exchange.engine is not None:
                exchange.engine.abort()
            if not exchange.answered:
                self.write(wire.error_answer(408, f"rigctl gateway: no byte of the request body in {limit_s:g} s"))
            exchange.end("refused")
            self.linger()
            return
        if self.waiting == "head" and self.head_began:
            self.write(wire.error_answer(408, f"rigctl gateway: the request head did not arrive whole in {limit_s:g} s"))
            self.linger()
            return
        self.close()
