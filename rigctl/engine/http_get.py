"""HTTP/1.1 GET over one kept-alive socket (TLS for https): what rigctl needs to ask a vLLM or
a Prometheus, and nothing else. The one GET of rigctl's core: engine/client.py and the record's
Prometheus reader (record/prometheus.py) use it; the bench's streaming load is httpx's (async,
the client the apps use), the front door's its own (httptools).

Against the standard library's kept-alive http.client (benchmarks/bench_http.py, same run): it
costs a little less CPU a scrape (0.7x and 0.9x in two runs), and it gives what http.client does not: one deadline for the whole
answer (a server trickling a byte at a time cannot hold the caller past its timeout, where
http.client's timeout is per read) and a bound on the body's size before it is read.

Kept instead of httpx by measurement (benchmarks/bench_http.py, same server, same run):
importing httpx costs `rigctl status` more than everything else it imports (its CLI module,
and Rich with it where click is installed), and a kept-alive httpx.Client costs more CPU per
scrape at one scrape a second beside vLLM. tests/engine/test_http_get.py holds it to httpx's
answers on the framings servers use. It reads the status line, Content-Length or chunked
bodies, and Connection: close; anything else is a ProtocolError, never a guess.
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl

MAX_HEAD = 64 * 1024  # a status line and headers; vLLM sends a few hundred bytes
MAX_BODY = 64 * 1024 * 1024  # /metrics of many replicas is a few MB


class ProtocolError(Exception):
    """The peer answered, but not with HTTP/1.x this reader understands."""


class BodyTooLarge(ProtocolError):
    """The answer is larger than the caller takes (max_body)."""


class StaleConnection(Exception):
    """A kept-alive connection the server had closed: nothing was answered on it."""


class HttpGet:
    def __init__(
        self,
        host: str,
        port: int,
        timeout: float,
        headers: dict[str, str],
        tls: bool | ssl.SSLContext = False,
        max_body: int = MAX_BODY,
    ) -> None:
        """`tls`: True for the system's CAs, or a context of one's own (a self-signed vLLM);
        `max_body`: a larger answer is a BodyTooLarge."""
        self._max_body = max_body
        self._address = (host, port)
        self._timeout = timeout
        self._tls: ssl.SSLContext | None = None
        if tls is True:
            import ssl  # only for https: a tenth of `rigctl status`'s import time otherwise

            self._tls = ssl.create_default_context()
        elif tls:
            self._tls = tls
        self._host = host
        named = f"[{host}]" if ":" in host else host  # an IPv6 literal is bracketed in Host, as in URLs
        fields = {"Host": f"{named}:{port}", "Accept-Encoding": "identity", **headers}
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode("latin-1") + b"\r\n"
        self._sock: socket.socket | None = None
        self._buffer = bytearray()
        self._deadline = 0.0

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buffer.clear()

    def get(self, path: str) -> tuple[int, bytes]:
        """(status, body). A kept-alive connection found closed is reopened once; any other
        failure closes the connection and raises (OSError, ProtocolError)."""
        # One deadline for the whole answer: a server that trickles a byte now and then must not
        # hold a caller longer than its timeout, however patient each recv is.
        self._deadline = time.monotonic() + self._timeout
        for _ in (1, 2):
            reused = self._sock is not None
            if self._sock is None:
                sock = socket.create_connection(self._address, timeout=self._timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._sock = self._tls.wrap_socket(sock, server_hostname=self._host) if self._tls else sock
            try:
                self._sock.sendall(b"GET " + path.encode("latin-1") + b" HTTP/1.1\r\n" + self._head)
                return self._response(reused)
            except StaleConnection:
                self.close()
            except BaseException:
                self.close()
                raise
        raise ConnectionResetError("the server closed the connection twice")

    def _response(self, reused: bool) -> tuple[int, bytes]:
        head = self._read_until(b"\r\n\r\n", MAX_HEAD, stale_ok=reused)
        lines = head.decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
        status = int(code)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                raise ProtocolError(f"bad header line: {line[:80]!r}")
            headers[name.strip().lower()] = value.strip()
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        if status < 200 or status in (204, 304):
            body = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._chunked()
        elif "content-length" in headers:
            length = headers["content-length"]
            if not length.isdigit():
                raise ProtocolError(f"bad Content-Length: {length[:20]!r}")
            if int(length) > self._max_body:
                raise BodyTooLarge(f"the answer is larger than {self._max_body // 2**20} MiB")
            body = self._read_exactly(int(length))
        else:  # the body runs to the end of the connection
            body, keep = self._read_to_close(), False
        if not keep:
            self.close()
        return status, body

    def _fill(self) -> bool:
        assert self._sock is not None
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no complete answer within {self._timeout:g} s")
        self._sock.settimeout(left)
        try:
            data = self._sock.recv(65536)
        except TimeoutError:
            raise TimeoutError(f"no complete answer within {self._timeout:g} s") from None
        self._buffer += data
        return bool(data)

    def _read_until(self, marker: bytes, limit: int, stale_ok: bool = False) -> bytes:
        start = 0
        while (end := self._buffer.find(marker, start)) < 0:
            if len(self._buffer) > limit:
                raise ProtocolError(f"no {marker!r} within {limit} bytes")
            start = max(0, len(self._buffer) - len(marker) + 1)
            try:
                got = self._fill()
            except ConnectionResetError:
                if stale_ok and not self._buffer:
                    raise StaleConnection() from None
                raise
            if not got:
                if stale_ok and not self._buffer:
                    raise StaleConnection()
                raise ConnectionResetError("the server closed the connection mid-response")
        out = bytes(self._buffer[:end])
        del self._buffer[: end + len(marker)]
        return out

    def _read_exactly(self, length: int) -> bytes:
        while len(self._buffer) < length:
            if not self._fill():
                raise ConnectionResetError("the server closed the connection mid-body")
        out = bytes(self._buffer[:length])
        del self._buffer[:length]
        return out

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            size_line = self._read_until(b"\r\n", 1024).split(b";")[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size: {size_line[:20]!r}") from None
            if size == 0:
                while self._read_until(b"\r\n", MAX_HEAD):  # trailers end with an empty line
                    pass
                return b"".join(parts)
            total += size
            if total > self._max_body:
                raise BodyTooLarge(f"the answer is larger than {self._max_body // 2**20} MiB")
            parts.append(self._read_exactly(size))
            if self._read_exactly(2) != b"\r\n":
                raise ProtocolError("chunk not followed by CRLF")

    def _read_to_close(self) -> bytes:
        while self._fill():
            if len(self._buffer) > self._max_body:
                raise BodyTooLarge(f"the answer is larger than {self._max_body // 2**20} MiB")
        out = bytes(self._buffer)
        self._buffer.clear()
        return out
