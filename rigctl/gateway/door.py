"""The front door's data path: the apps' connections in, vLLM's connections out.

The I/O stack was chosen by benchmarks/bench_gateway.py (beside nginx with proxy_buffering off, in
one run): asyncio Protocols with httptools (llhttp, uvicorn's parser) for the framing. An answer's
bytes are written to the app as they arrive, unchanged, from the upstream protocol's
data_received; the parser only reads a copy to know where the answer ends. No await per chunk and
no re-framing is what brought the CPU per streamed token near nginx's: the h11/httpcore streams of
`rigctl capture` cost 10.8x nginx's there.

Exactness: each request is an Exchange that ends once, as finished (its answer was relayed whole),
cut (the door cut it, or vLLM's connection went under it), gone (the app hung up first), refused
(answered here: a bound, the hold's deadline, nothing serving) or failed (vLLM did not answer: 502).
A request is never sent twice: nothing here retries a request once any byte of it was written.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, cast
from urllib.parse import urlsplit

import httptools

from rigctl.gateway import wire
from rigctl.gateway.hold import AppsSeen, Hold, HoldBounds, Ticket

Outcome = Literal["finished", "cut", "gone", "refused", "failed"]
HELD_READ = 1024 * 1024  # of a held request's body, kept while it waits (its app's socket keeps the rest)
BODY_HIGH_WATER = 4 * 1024 * 1024  # a body not yet taken by vLLM: the app's reading pauses past this
CONNECT_S = 10.0
IDLE_REUSE_S = 4.0  # uvicorn closes an idle keep-alive connection after 5 s: never reuse one near that
HEAD_LIMIT = 64 * 1024  # a request line and headers larger than this are refused
RETRY_AFTER_S = 5
Resolver = Callable[[], "str | None"]  # the base URL of what serves now (None: nothing)


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
        "in_flight_at_hold",
        "keep_alive",
        "method",
        "outcome",
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
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.keep_alive = True
        self.in_flight_at_hold = False
        names = {k.lower(): v for k, v in headers}
        self.chunked = b"chunked" in names.get(b"transfer-encoding", b"").lower()
        self.continue_wanted = names.get(b"expect", b"").lower() == b"100-continue"
        agent = names.get(b"user-agent", b"").split(b" ", 1)[0]
        self.client = agent.decode("latin-1")[:60] or "unnamed"

    def feed(self, data: bytes) -> None:
        """Body bytes from the app: on to vLLM once forwarded, kept until then."""
        if self.outcome is not None:
            return  # answered already (refused, or vLLM answered before the body ended): dropped
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

    def end(self, outcome: Outcome) -> None:
        if self.outcome is not None:
            return
        self.outcome = outcome
        self.app.door.ended(self)
        if not self.done.done():
            self.done.set_result(None)


class AppConnection(asyncio.Protocol):
    """One connection of an app: requests parsed as they come, answered one at a time in order."""

    def __init__(self, door: Gateway) -> None:
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


class EngineConnection(asyncio.Protocol):
    """One connection to vLLM, carrying one exchange at a time; kept for reuse when its answer
    ended cleanly and vLLM keeps it alive."""

    def __init__(self, pool: EnginePool, key: tuple[str, int]) -> None:
        self.pool, self.key = pool, key
        self.transport: asyncio.Transport | None = None
        self.exchange: Exchange | None = None
        self.parser: httptools.HttpResponseParser | None = None
        self.reusable = False
        self.idle_since = 0.0
        self.lost = False
        self.framed = False  # the answer says where it ends (content-length or chunked)
        self.head_done = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def carry(self, exchange: Exchange, head: bytes) -> None:
        self.exchange = exchange
        self.parser = httptools.HttpResponseParser(self)
        self.reusable = False
        self.framed = self.head_done = False
        self.send(head)

    def send(self, data: bytes) -> None:
        if self.transport is not None and not self.lost:
            self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        exchange = self.exchange
        if exchange is None or self.parser is None:
            self.abort()  # bytes nobody asked for: the connection is not to be trusted
            return
        exchange.answered = True
        exchange.app.write(data)  # the bytes as vLLM sent them
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.abort()
            exchange.app.abort()  # the app sees the answer cut, as it was
            exchange.end("cut")

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self.framed = True

    def on_headers_complete(self) -> None:
        assert self.parser is not None and self.exchange is not None
        self.head_done = True
        self.reusable = self.parser.should_keep_alive()
        if self.exchange.method == b"HEAD":
            self.reusable = False
            self.on_message_complete()

    def on_message_complete(self) -> None:
        exchange = self.exchange
        if exchange is None:
            return
        self.exchange = None
        self.parser = None
        if exchange.app.writing_paused and self.transport is not None:
            self.transport.resume_reading()
        if self.reusable and exchange.complete and not exchange.app.gone:
            self.pool.put(self)
        else:
            self.abort()
        exchange.end("finished")

    def pause_writing(self) -> None:
        if self.exchange is not None:
            self.exchange.app.pause_reading("engine")

    def resume_writing(self) -> None:
        if self.exchange is not None:
            self.exchange.app.resume_reading("engine")

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.pool.forget(self)
        exchange, self.exchange = self.exchange, None
        if exchange is None or exchange.outcome is not None:
            return
        if self.head_done and not self.framed:  # an answer that ends where its connection does (HTTP/1.0's way)
            exchange.keep_alive = False
            exchange.end("finished")
            return
        if exchange.answered:
            exchange.app.abort()  # cut under it: the app sees its answer end short, as vLLM left it
            exchange.end("cut")
        else:
            exchange.app.door.upstream_failed(exchange, "vLLM closed the connection without answering")

    def abort(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.abort()


class EnginePool:
    """Keep-alive connections to vLLM, by address: a new connection per request would cost a
    connect and vLLM's accept for every token stream."""

    def __init__(self) -> None:
        self.idle: dict[tuple[str, int], list[EngineConnection]] = {}
        self.open: set[EngineConnection] = set()

    async def get(self, key: tuple[str, int]) -> EngineConnection:
        now = time.monotonic()
        idle = self.idle.get(key, [])
        while idle:
            conn = idle.pop()
            usable = conn.transport is not None and not conn.transport.is_closing() and not conn.lost
            if usable and now - conn.idle_since < IDLE_REUSE_S:
                return conn
            conn.abort()
        loop = asyncio.get_running_loop()
        _, conn = await asyncio.wait_for(loop.create_connection(lambda: EngineConnection(self, key), *key), CONNECT_S)
        self.open.add(conn)
        return conn

    def put(self, conn: EngineConnection) -> None:
        conn.idle_since = time.monotonic()
        self.idle.setdefault(conn.key, []).append(conn)

    def forget(self, conn: EngineConnection) -> None:
        self.open.discard(conn)
        idle = self.idle.get(conn.key)
        if idle and conn in idle:
            idle.remove(conn)

    def close(self) -> None:
        for conn in list(self.open):
            conn.abort()
        self.idle.clear()


@dataclass
class Counts:
    """Since the door opened, every request by how it ended."""

    finished: int = 0
    cut: int = 0
    gone: int = 0
    refused: int = 0
    failed: int = 0
    by_client: dict[str, int] = field(default_factory=dict)


@dataclass
class HoldWindow:
    """The hold of one switch: the exchanges that were in flight when it began, and its figures."""

    in_flight: set[Exchange]
    ended: dict[str, int] = field(default_factory=lambda: {"finished": 0, "cut": 0, "gone": 0})
    refused: int = 0


def split_upstream(url: str) -> tuple[tuple[str, int], bytes]:
    """(host, port) to connect to and the Host header, from a base URL; credentials in it are
    never used or kept (the app's own Authorization header passes through)."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"not an http:// URL: {parts.scheme}://{parts.hostname or ''}")
    port = parts.port or 80
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    return (host, port), f"{shown}:{port}".encode()


class Gateway:
    """The door itself: admission, the hold, forwarding, the exact count in flight."""

    def __init__(self, resolve: Resolver, bounds: HoldBounds | None = None, api_key: str | None = None) -> None:
        self.resolve = resolve
        self.hold = Hold(bounds or HoldBounds())
        self.api_key = api_key
        self.pool = EnginePool()
        self.apps: set[AppConnection] = set()
        self.in_flight: set[Exchange] = set()  # forwarded to vLLM, answer not ended
        self.counts = Counts()
        self.window: HoldWindow | None = None
        self.idle = asyncio.Event()
        self.idle.set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._release_task: asyncio.Task[None] | None = None

    def protocol(self) -> AppConnection:
        return AppConnection(self)

    # -- the life of one request
    def begin(self, exchange: Exchange) -> None:
        task = asyncio.get_running_loop().create_task(self._run(exchange))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, exchange: Exchange) -> None:
        app = exchange.app
        try:
            refusal = self._refusal(exchange)
            if refusal:
                self._answer(exchange, *refusal)
                return
            if self.hold.active:
                size = exchange.buffered + sum(len(v) for _, v in exchange.headers)
                full = self.hold.full(size)
                if full:
                    self._answer(exchange, 503, f"rigctl gateway: the rig is switching and {full}", RETRY_AFTER_S)
                    return
                exchange.ticket = self.hold.enter(size)
                try:
                    serving = await self.hold.wait(exchange.ticket)
                except asyncio.CancelledError:
                    return  # the app hung up while it waited: never sent
                if not serving:
                    self._answer(exchange, 503, "rigctl gateway: the rig is switching; try again shortly", RETRY_AFTER_S)
                    return
            await self._forward(exchange)
            await exchange.done
        finally:
            if exchange.outcome is None:
                exchange.end("gone" if app.gone else "refused")
            app.answered(exchange)

    def _refusal(self, exchange: Exchange) -> tuple[int, str] | None:
        if exchange.method == b"CONNECT" or not wire.is_origin_form(exchange.target):
            return 400, "rigctl gateway forwards only to the rig's vLLM: the request-target must be a path (/v1/...)"
        if self.api_key is not None:
            given = next((v for k, v in exchange.headers if k.lower() == b"authorization"), b"")
            if given != b"Bearer " + self.api_key.encode():
                return 401, "rigctl gateway: a missing or wrong API key (Authorization: Bearer ...)"
        return None

    async def _forward(self, exchange: Exchange) -> None:
        url = self.resolve()
        if url is None:
            self._answer(exchange, 503, "rigctl gateway: nothing serves on this rig now", RETRY_AFTER_S)
            return
        try:
            key, host = split_upstream(url)
        except ValueError as exc:
            self._answer(exchange, 502, f"rigctl gateway: the served address cannot be used: {exc}")
            return
        try:
            engine = await self.pool.get(key)
        except (OSError, TimeoutError) as exc:
            self._answer(exchange, 502, f"rigctl gateway: vLLM at {host.decode()} did not answer: {_why(exc)}")
            return
        if exchange.app.gone:
            self.pool.put(engine)
            return
        head = wire.request_head(exchange.method, exchange.target, exchange.version, exchange.headers, host, exchange.chunked)
        self.in_flight.add(exchange)
        self.idle.clear()
        exchange.engine = engine
        # the head and the body read so far in one write: two small writes would wait on the
        # first's ACK wherever Nagle is on
        parts = [head, *(wire.chunk(d) if exchange.chunked else d for d in exchange.body)]
        if exchange.complete and exchange.chunked:
            parts.append(wire.LAST_CHUNK)
        exchange.body.clear()
        exchange.buffered = 0
        engine.carry(exchange, b"".join(parts))
        if exchange.continue_wanted and not exchange.complete:
            exchange.app.write(wire.CONTINUE)
        exchange.app.resume_reading("body")

    def _answer(self, exchange: Exchange, status: int, message: str, retry_after: int | None = None) -> None:
        exchange.app.write(wire.error_answer(status, message, retry_after))
        exchange.end("failed" if status == 502 else "refused")

    def upstream_failed(self, exchange: Exchange, why: str) -> None:
        self._answer(exchange, 502, f"rigctl gateway: {why}")

    def ended(self, exchange: Exchange) -> None:
        outcome = exchange.outcome
        assert outcome is not None
        self.in_flight.discard(exchange)
        if not self.in_flight:
            self.idle.set()
        counts = self.counts
        setattr(counts, outcome, getattr(counts, outcome) + 1)
        counts.by_client[exchange.client] = counts.by_client.get(exchange.client, 0) + 1
        window = self.window
        if window is not None:
            if exchange in window.in_flight and outcome in window.ended:
                window.ended[outcome] += 1
            elif outcome == "refused":
                window.refused += 1

    # -- what a switch asks of the door (the control channel)
    def begin_hold(self) -> int:
        """Hold new requests; the count forwarded and unanswered (the drain)."""
        if self.window is None:
            self.window = HoldWindow(set(self.in_flight))
            self.hold.begin()
        return len(self.in_flight)

    async def wait_idle(self, seconds: float) -> int:
        """Until nothing forwarded is unanswered, at most `seconds`; the count then."""
        if self.in_flight:
            try:
                await asyncio.wait_for(self.idle.wait(), max(0.0, seconds))
            except TimeoutError:
                pass
        return len(self.in_flight)

    def cut(self) -> int:
        """End every answer in flight now (the drain's deadline): the apps see them cut, and vLLM,
        whose connection closes, stops generating them."""
        cut = list(self.in_flight)
        for exchange in cut:
            if exchange.engine is not None:
                exchange.engine.abort()
            exchange.app.abort()
            exchange.end("cut")
        return len(cut)

    def end_hold(self) -> AppsSeen:
        """Release the held requests, in arrival order, to what serves now (or 503 each when
        nothing does); what the apps saw of the hold."""
        window = self.window
        if window is None:
            return AppsSeen()
        self.window = None
        serving = self.resolve() is not None
        window_s = self.hold.clock() - self.hold.since
        released = self.hold.end(serving)
        seen = AppsSeen(
            held=self.hold.held,
            longest_s=round(max([self.hold.longest, *(t.released - t.arrived for t in released if t.released)]), 3),
            window_s=round(window_s, 3),
            refused=window.refused + (0 if serving else len(released)),
            in_flight=len(window.in_flight),
            finished=window.ended["finished"],
            cut=window.ended["cut"],
            gone=window.ended["gone"],
        )
        return seen

    def status(self) -> dict[str, object]:
        return {
            "upstream": self.resolve(),
            "in_flight": len(self.in_flight),
            "holding": self.hold.active,
            "held": len(self.hold.line),
            "apps": len(self.apps),
            "counts": {k: v for k, v in vars(self.counts).items() if k != "by_client"},
            "clients": dict(self.counts.by_client),
        }

    async def close(self, grace_s: float) -> int:
        """Stop: the answers in flight get up to grace_s to end; what is left is cut (its count)."""
        if self.window is not None:
            self.end_hold()
        await self.wait_idle(grace_s)
        left = self.cut()
        for app in list(self.apps):
            app.close()
        self.pool.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        return left


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no connection within {CONNECT_S:g} s"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
