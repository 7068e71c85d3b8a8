"""The front door's side toward vLLM: one connection carries one exchange at a time, and hands
each answer's bytes to the app as they arrive, unchanged; the parser reads them only to know where
the answer ends. Kept alive for the next request when vLLM keeps it so."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Literal, Protocol, cast
from urllib.parse import urlsplit

import httptools

from rigctl.gateway import wire
from rigctl.gateway.answer import AnswerReader

CONNECT_S = 10.0
CUT_WAIT_S = 1.0  # for the event under way to end before a stream is cut (vLLM writes one in a write)
IDLE_REUSE_S = 4.0  # uvicorn closes an idle keep-alive connection after 5 s: never reuse one near that


class App(Protocol):
    """The app's connection, as an answer's bytes reach it (rigctl.gateway.exchange.AppConnection)."""

    gone: bool
    writing_paused: bool

    def write(self, data: bytes) -> None: ...

    def abort(self) -> None: ...

    def pause_reading(self, why: str) -> None: ...

    def resume_reading(self, why: str) -> None: ...


class Kept(Protocol):
    """What the door keeps of a request's answer while recording (rigctl.gateway.exchange.Kept)."""

    status: int | None
    answer: AnswerReader | None


class Exchange(Protocol):
    """What a connection to vLLM needs of the request it carries (rigctl.gateway.exchange.Exchange)."""

    answered: bool
    keep_alive: bool
    probe: bool
    status: int | None

    @property
    def kept(self) -> Kept | None: ...

    @property
    def app(self) -> App: ...

    @property
    def method(self) -> bytes: ...

    @property
    def complete(self) -> bool: ...

    @property
    def outcome(self) -> str | None: ...

    def end(self, outcome: Literal["finished", "cut"]) -> None: ...

    def no_answer(self, why: str) -> None: ...

    def judge(self, status: int) -> bool: ...

    def requeue(self, message: str = "") -> None: ...


class EngineConnection(asyncio.Protocol):
    """One connection to vLLM, carrying one exchange at a time; kept for reuse when its answer
    ended cleanly and vLLM keeps it alive."""

    def __init__(self, pool: EnginePool, key: tuple[str, int], host: bytes) -> None:
        self.pool, self.key, self.host = pool, key, host
        self.transport: asyncio.Transport | None = None
        self.exchange: Exchange | None = None
        self.parser: httptools.HttpResponseParser | None = None
        self.reusable = False
        self.idle_since = 0.0
        self.lost = False
        self.framed = False  # the answer says where it ends (content-length or chunked)
        self.head_done = False
        self.reading = False  # the answer's body is read for the recording (its usage, its error)
        self.streamed = False
        self.chunked = False
        # the last two reads passed to the app, kept by reference (never copied: a token costs the
        # door one assignment here): where the answer stands is looked at only when it is cut
        self._last = self._before = b""
        self.events = 0  # of a streamed answer: its SSE events so far (`data:` lines), about one a token
        # a probe's answer (gateway/judge.py), held back until its status line is judged
        self.withheld: list[bytes] = []
        self.verdict: str | None = None  # "go" or "refused", once judged
        self.first_byte = 0.0  # monotonic
        self.pending_cut: str | None = None  # cut at the end of the chunk under way

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def carry(self, exchange: Exchange, head: bytes) -> None:
        self.exchange = exchange
        self.parser = httptools.HttpResponseParser(self)
        self.reusable = False
        self.framed = self.head_done = self.streamed = self.chunked = False
        self._last = self._before = b""
        self.events, self.first_byte, self.pending_cut = 0, 0.0, None
        self.withheld, self.verdict = [], None
        self.reading = self.pool.recording and exchange.kept is not None
        self.send(head)

    def send(self, data: bytes) -> None:
        if self.transport is not None and not self.lost:
            self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        exchange = self.exchange
        if exchange is None or self.parser is None:
            self.abort()  # bytes nobody asked for: the connection is not to be trusted
            return
        if exchange.probe:
            self._probe_data(exchange, data)
            return
        if not exchange.answered:
            exchange.answered, self.first_byte = True, time.monotonic()
        exchange.app.write(data)  # the bytes as vLLM sent them
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.abort()
            exchange.app.abort()  # the app sees the answer cut, as it was
            exchange.end("cut")
            return
        self._before, self._last = self._last, data
        self.events += data.count(b"data:")  # a C scan of the read: no Python call a token
        if self.pending_cut is not None and self.exchange is exchange and self._ends_cleanly():
            self._end_with_error(self.pending_cut)

    def _probe_data(self, exchange: Exchange, data: bytes) -> None:
        """A probe's bytes, held back until its status line is judged: then either the app gets
        them all and the rest as it comes, or the request goes back to the hold (refused)."""
        assert self.parser is not None
        self.withheld.append(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.verdict = self.verdict or "go"  # not an answer to judge: passed on as it was
        if self.verdict == "refused":
            body = b"".join(self.withheld).partition(b"\r\n\r\n")[2]
            self.exchange = None
            self.abort()  # vLLM's error answer is dropped with its connection
            exchange.requeue(_error_message(body))
        elif self.verdict == "go":
            self.unprobe(exchange)

    def unprobe(self, exchange: Exchange | None = None) -> None:
        """The app gets what was held back of its answer, and the rest as it comes."""
        exchange = exchange or self.exchange
        if exchange is None:
            return
        exchange.probe = False
        if self.withheld:
            exchange.answered, self.first_byte = True, time.monotonic()
            data, self.withheld = b"".join(self.withheld), []
            exchange.app.write(data)
            self._before, self._last = self._last, data
            self.events += data.count(b"data:")

    def on_header(self, name: bytes, value: bytes) -> None:
        lower = name.lower()
        if lower in (b"content-length", b"transfer-encoding"):
            self.framed = True
            self.chunked = self.chunked or (lower == b"transfer-encoding" and b"chunked" in value.lower())
        elif lower == b"content-type" and b"event-stream" in value:
            self.streamed = True

    def on_headers_complete(self) -> None:
        assert self.parser is not None and self.exchange is not None
        self.head_done = True
        self.reusable = self.parser.should_keep_alive()
        self.exchange.status = self.parser.get_status_code()
        if self.exchange.probe:
            self.verdict = "go" if self.exchange.judge(self.exchange.status) else "refused"
        kept = self.exchange.kept
        if self.reading and kept is not None:
            kept.status = self.parser.get_status_code()
            kept.answer = AnswerReader(self.streamed)
        if self.exchange.method == b"HEAD":
            self.reusable = False
            self.on_message_complete()

    def on_body(self, body: bytes) -> None:
        if self.reading and self.exchange is not None and self.exchange.kept is not None and self.exchange.kept.answer:
            self.exchange.kept.answer.feed(body)  # a copy read for the recording; the app got the bytes already

    def on_message_complete(self) -> None:
        exchange = self.exchange
        if exchange is None or self.verdict == "refused":
            return  # a refused probe's answer is never the app's: it goes back to the hold
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
            # cut under it (the engine died, or was stopped): a stream between two events is told
            # why; anything else ends short, as vLLM left it
            if self._ends_cleanly():
                self.exchange = exchange
                self._end_with_error("vLLM closed the stream mid-answer (its engine stopped or died)")
                return
            exchange.app.abort()
            exchange.end("cut")
        else:
            exchange.no_answer("vLLM closed the connection without answering")

    def cut(self, why: str) -> None:
        """End this answer now and tell the app why: a stream between two events gets one SSE
        event in vLLM's error shape and its last chunk (mid-event, once the event under way has
        ended, at most CUT_WAIT_S later); an answer not begun gets a 503 with Retry-After; any
        other answer ends short. vLLM's connection closes, and vLLM stops generating it."""
        exchange = self.exchange
        if exchange is None or exchange.outcome is not None:
            return
        if not exchange.answered:
            exchange.app.write(wire.error_answer(503, why, wire.RETRY_AFTER_S))
            self.abort()
            exchange.end("cut")
        elif self._ends_cleanly():
            self._end_with_error(why)
        elif self.streamed:
            self.pending_cut = why
            asyncio.get_running_loop().call_later(CUT_WAIT_S, self._cut_short, exchange)
        else:
            self._cut_short(exchange)

    def _ends_cleanly(self) -> bool:
        """An SSE event can be added to what the app has: the bytes passed so far end with an
        event's blank line (vLLM writes an event in one chunk, one write), and, chunked, with that
        chunk's CRLF. A chunk-size line ends with CRLF after a hex digit, never after a newline, so
        the last bytes alone say where the answer stands."""
        if not self.streamed or not self.head_done:
            return False
        tail = (self._before[-4:] + self._last)[-4:]
        if self.chunked:
            return tail == b"\n\n\r\n"
        return not self.framed and tail.endswith(b"\n\n")

    def _end_with_error(self, why: str) -> None:
        exchange = self.exchange
        assert exchange is not None
        self.exchange = None
        if self.chunked:
            exchange.app.write(wire.chunk(wire.sse_error(503, why)) + wire.LAST_CHUNK)
        else:
            exchange.keep_alive = False  # its end is its connection's close
            exchange.app.write(wire.sse_error(503, why))
        self.abort()
        exchange.end("cut")

    def _cut_short(self, exchange: Exchange) -> None:
        if exchange.outcome is not None:
            return
        self.exchange = None
        self.abort()
        exchange.app.abort()
        exchange.end("cut")

    def abort(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.abort()


class EnginePool:
    """Keep-alive connections to vLLM, by address: a new connection per request would cost a
    connect and vLLM's accept for every token stream."""

    def __init__(self, recording: bool = False) -> None:
        self.idle: dict[tuple[str, int], list[EngineConnection]] = {}
        self.open: set[EngineConnection] = set()
        self.recording = recording  # answers are read (a copy) for what they said

    async def get(self, key: tuple[str, int], host: bytes) -> EngineConnection:
        now = time.monotonic()
        idle = self.idle.get(key, [])
        while idle:
            conn = idle.pop()
            usable = conn.transport is not None and not conn.transport.is_closing() and not conn.lost
            if usable and now - conn.idle_since < IDLE_REUSE_S:
                return conn
            conn.abort()
        loop = asyncio.get_running_loop()
        _, conn = await asyncio.wait_for(loop.create_connection(lambda: EngineConnection(self, key, host), *key), CONNECT_S)
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


def _error_message(body: bytes) -> str:
    """The message of an error answer in vLLM's shape (or FastAPI's `detail`), when it is whole."""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    error = data.get("error")
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else data.get("detail")
    return str(message)[:200] if message else ""


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
