"""The capture proxy: the owner's apps talk to it as they would to vLLM, and it forwards every
request unchanged and every answer as it arrives (a stream's events are passed on as they come,
never held for the trace), appending each request the apps sent to the trace.

HTTP/1.1 is read with h11 and forwarded with httpcore: the two libraries httpx is built on, used
directly because a proxy wants the answer's raw bytes (httpcore never decodes them) and because
httpx loads its command line, and Rich with it, at import: 20 MB a capture that runs all day
beside the inference server would carry for nothing. Hop-by-hop headers are the only thing either
side drops. The bytes of an answer are the bytes
vLLM sent (undecoded): a JSON answer is the same byte for byte, a stream the same event for
event. Header values pass through and are never written anywhere.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import h11
import httpcore

from rigctl.gateway.answer import AnswerReader
from rigctl.gateway.trace_file import TraceFile

# RFC 9110 7.6.1: these belong to one connection, never forwarded; host and content-length are
# set again here for the upstream connection, and by h11 for the app's
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
        b"expect",
    }
)  # 100-continue is answered here, to the app; the body is whole by then
REQUEST_LIMIT = 256 * 1024 * 1024  # a 1M-token prompt is a few MB of text
READ_SIZE = 64 * 1024
APP_GONE = "the app went away before its answer ended"
# what the upstream connection can fail with (httpcore has no one base class for them)
UPSTREAM_ERRORS = (
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.TimeoutException,
    httpcore.UnsupportedProtocol,
    httpcore.ProxyError,
)
# no read timeout: a long answer may pause (a queued request, a long prefill) and the app has its own
TIMEOUTS = {"connect": 10.0, "read": None, "write": None, "pool": None}


@dataclass
class CaptureCounts:
    traced: int = 0  # requests written to the trace
    streamed: int = 0
    failed: int = 0  # traced, and the upstream failed them (forwarded as they failed)
    gone: int = 0  # traced, and the app hung up before its answer ended (no fault of the upstream's)
    passed: int = 0  # forwarded, not traced (not a JSON POST: /v1/models, /health, /metrics)
    cut: int = 0  # the capture ended before their answer did


@dataclass(frozen=True)
class Exchange:
    """One traced request, once its answer has ended: what the CLI says when asked to."""

    endpoint: str
    status: int | None
    stream: bool
    completion_tokens: int | None
    error: str


class CaptureProxy:
    def __init__(
        self,
        upstream: str,
        trace: TraceFile,
        max_requests: int | None = None,
        on_exchange: Callable[[Exchange], None] | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self._host = urlsplit(self.upstream).netloc.rsplit("@", 1)[-1].encode()
        self.trace = trace
        self.max_requests = max_requests
        self.on_exchange = on_exchange
        self.counts = CaptureCounts()
        self.trouble = ""  # why the capture had to stop ("" when it did not)
        self.started = time.monotonic()
        self.stop = asyncio.Event()  # stop taking requests; answers in flight may end
        self._handlers: set[asyncio.Task[None]] = set()  # a task per app connection
        self._answering = 0  # requests forwarded whose answer has not ended
        self._idle = asyncio.Event()
        self._idle.set()
        self._pool: httpcore.AsyncConnectionPool | None = None

    @property
    def in_flight(self) -> int:
        return self._answering

    async def serve(
        self,
        host: str,
        port: int,
        ready: Callable[[int], None] | None = None,
        duration_s: float | None = None,
        cut: asyncio.Event | None = None,
        grace_s: float = 30.0,
    ) -> CaptureCounts:
        """Forward until `stop` (set by the caller, the duration or max_requests), then wait up to
        grace_s (or until `cut`) for the answers in flight; those still running are cut and traced
        as such. `ready` gets the port listened on (0 asks for a free one)."""
        # as many upstream connections as the apps open (an agent fleet streams in parallel); no
        # proxy from the environment: the upstream is where it was said to be
        async with httpcore.AsyncConnectionPool(max_connections=1024, max_keepalive_connections=64) as pool:
            self._pool = pool
            server = await asyncio.start_server(self._accept, host, port, limit=READ_SIZE)
            if ready:
                ready(server.sockets[0].getsockname()[1])
            try:
                await _wait(self.stop, duration_s)
            finally:
                self.stop.set()
                server.close()
                if self._answering:  # idle keep-alive connections are not waited for
                    await _wait(cut or asyncio.Event(), grace_s, also=self._idle)
                for task in list(self._handlers):
                    task.cancel()
                await asyncio.gather(*self._handlers, return_exceptions=True)
                await server.wait_closed()
        return self.counts

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._connection(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the app hung up between requests
        finally:
            self._handlers.discard(task)
            writer.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        while not self.stop.is_set():
            try:
                request = await _read_request(conn, reader, writer)
            except h11.RemoteProtocolError as exc:
                await _refuse(conn, writer, exc.error_status_hint, f"not an HTTP request rigctl capture can read: {exc}")
                return
            except _TooLarge:
                await _refuse(conn, writer, 413, f"a request over {REQUEST_LIMIT // (1024 * 1024)} MB")
                return
            if request is None:
                return
            self._answering += 1
            self._idle.clear()
            try:
                await self._forward(conn, writer, *request)
            finally:
                self._answering -= 1
                if not self._answering:
                    self._idle.set()
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()

    async def _forward(self, conn: h11.Connection, writer: asyncio.StreamWriter, request: h11.Request, body: bytes) -> None:
        arrived = time.monotonic() - self.started
        target = request.target.decode("latin-1")
        method = request.method.decode("latin-1")
        traced = _traced_body(method, body)
        streaming = bool(traced and traced.get("stream") is True)
        answer = AnswerReader(streaming)
        status: int | None = None
        error = ""
        headers = [
            (b"host", self._host),
            (b"content-length", str(len(body)).encode()),
            *((k, v) for k, v in request.headers if k.lower() not in HOP_BY_HOP),
        ]
        assert self._pool is not None
        try:
            upstream = httpcore.Request(
                method, self.upstream + target, headers=headers, content=body, extensions={"timeout": TIMEOUTS}
            )
            try:
                response = await self._pool.handle_async_request(upstream)
            except UPSTREAM_ERRORS as exc:
                error = f"the server at {self.upstream} did not answer: {_describe(exc)}"
                await _refuse(conn, writer, 502, f"rigctl capture: {error}")
                return
            status = response.status
            try:
                error = await self._relay(conn, writer, response, answer)
            finally:
                await response.aclose()
        except asyncio.CancelledError:
            error = error or "the capture ended before its answer did"
            if traced is not None:
                self.counts.cut += 1
            raise
        finally:
            if traced is None:
                self.counts.passed += 1
            else:
                self._keep(arrived, target.split("?", 1)[0], traced, streaming, status, answer, error)

    async def _relay(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, response: httpcore.Response, answer: AnswerReader
    ) -> str:
        """Pass the answer on as it arrives; how it failed, or ""."""
        names = {k.lower(): v for k, v in response.headers}
        headers = [(k, v) for k, v in response.headers if k.lower() not in HOP_BY_HOP]
        if b"content-length" in names and b"transfer-encoding" not in names:
            headers.append((b"content-length", names[b"content-length"]))
        if names.get(b"content-encoding"):
            answer.unread = True  # passed on as it is, not read
        reason = response.extensions.get("reason_phrase", b"")
        writer.write(conn.send(h11.Response(status_code=response.status, headers=headers, reason=reason)) or b"")
        stream = response.stream
        assert isinstance(stream, AsyncIterable)
        try:
            async for data in stream:
                answer.feed(data)
                try:
                    writer.write(conn.send(h11.Data(data=data)) or b"")
                    await writer.drain()
                except ConnectionError:
                    return APP_GONE
        except UPSTREAM_ERRORS as exc:
            conn.send_failed()
            writer.transport.abort()  # the app sees the answer cut, as it was
            return f"the answer was cut off: {_describe(exc)}"
        writer.write(conn.send(h11.EndOfMessage()) or b"")
        await writer.drain()
        answer.finish()
        if response.status >= 400:
            return f"HTTP {response.status}" + (f": {answer.error}" if answer.error else "")
        if answer.streaming and not answer.done and not answer.unread:
            return "the stream ended before [DONE]"
        return answer.error

    def _keep(
        self,
        arrived: float,
        endpoint: str,
        body: dict[str, Any],
        streaming: bool,
        status: int | None,
        answer: AnswerReader,
        error: str,
    ) -> None:
        entry: dict[str, Any] = {"t": round(arrived, 6), "endpoint": endpoint, "body": body, "status": status, "stream": streaming}
        entry.update(answer.usage())
        if error:
            entry["error"] = error[:300]
        try:
            self.trace.write(entry)
        except OSError as exc:  # a full disk, a trace removed under it: stop, saying what was kept
            if not self.trouble:
                self.trouble = (
                    f"{self.trace.path}: the trace cannot be written ({exc.strerror or exc}); the "
                    f"capture stopped with {self.counts.traced} request(s) kept, the last one's "
                    f"answer passed on but not kept"
                )
            self.stop.set()
            return
        self.counts.traced += 1
        self.counts.streamed += streaming
        self.counts.gone += error == APP_GONE
        self.counts.failed += bool(error) and error != APP_GONE
        if self.on_exchange:
            self.on_exchange(Exchange(endpoint, status, streaming, answer.completion_tokens, error))
        if self.max_requests is not None and self.counts.traced >= self.max_requests:
            self.stop.set()


class _TooLarge(Exception):
    pass


async def _read_request(
    conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> tuple[h11.Request, bytes] | None:
    """The next request and its whole body (None: the app closed the connection)."""
    request: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            if conn.they_are_waiting_for_100_continue:  # curl asks before a body over 1 MB
                writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b"")
            data = await reader.read(READ_SIZE)
            conn.receive_data(data)  # b"" says the app closed
            continue
        if isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
            if len(body) > REQUEST_LIMIT:
                raise _TooLarge
        elif isinstance(event, h11.EndOfMessage):
            assert request is not None
            return request, bytes(body)
        elif isinstance(event, h11.ConnectionClosed):
            return None


async def _refuse(conn: h11.Connection, writer: asyncio.StreamWriter, status: int, message: str) -> None:
    """An answer of rigctl's own (the upstream did not answer; the request was unreadable), in the
    shape of vLLM's errors so an app reports it as it would vLLM's."""
    if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
        writer.transport.abort()
        return
    data = json.dumps({"error": {"message": message, "type": "rigctl_capture", "code": status}}).encode()
    try:
        writer.write(
            conn.send(
                h11.Response(
                    status_code=status,
                    headers=[
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(data)).encode()),
                        (b"connection", b"close"),
                    ],
                )
            )
            or b""
        )
        writer.write(conn.send(h11.Data(data=data)) or b"")
        writer.write(conn.send(h11.EndOfMessage()) or b"")
        await writer.drain()
    except (h11.LocalProtocolError, ConnectionError):
        writer.transport.abort()


def _traced_body(method: str, body: bytes) -> dict[str, Any] | None:
    """The request as the trace keeps it: a POST whose body is a JSON object (the API's requests);
    anything else is passed through untraced."""
    if method != "POST" or not body:
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


async def _wait(event: asyncio.Event, seconds: float | None, also: asyncio.Event | None = None) -> None:
    """Until either event is set or `seconds` pass (None: no limit)."""
    waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(event.wait())]
    if also:
        waits.append(asyncio.ensure_future(also.wait()))
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
