"""A TCP tap: a plain byte pump on 127.0.0.1 in front of a server that keeps every byte the server
sent, so a test can compare what an app received through the front door (rigctl capture) with what vLLM wrote on
the wire. Requests are sent one at a time; `since(mark)` is then exactly one answer."""

from __future__ import annotations

import socket
import threading
from typing import Any

import h11


class Tap:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sent = bytearray()  # what the server sent, in order, over every connection
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def mark(self) -> int:
        with self._lock:
            return len(self._sent)

    def since(self, mark: int) -> bytes:
        with self._lock:
            return bytes(self._sent[mark:])

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                app, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=self._pump, args=(app, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, app, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, keep: bool) -> None:
        try:
            while data := source.recv(65536):
                if keep:
                    with self._lock:
                        self._sent += data
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def parse_answer(raw: bytes, method: bytes = b"POST") -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body with any chunking undone) of one HTTP/1.1 answer as it was on the wire."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method=method, target="/", headers=[("host", "x"), ("content-length", "0")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(raw)
    status, headers, body = 0, {}, bytearray()
    ended = False
    while True:
        event: Any = conn.next_event()
        if isinstance(event, h11.Response):
            status = event.status_code
            headers = {k.decode(): v.decode() for k, v in event.headers}
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return status, headers, bytes(body)
        elif event is h11.NEED_DATA and not ended:
            conn.receive_data(b"")  # an answer without a length ends where its connection closed
            ended = True
        elif event is h11.NEED_DATA:
            raise AssertionError(f"the answer on the wire is incomplete ({len(raw)} bytes)")


def events(body: bytes) -> list[str]:
    """A stream's SSE events, each as its data text, in order."""
    text = body.decode().replace("\r\n", "\n")
    return [line[5:].strip() for block in text.split("\n\n") for line in block.splitlines() if line.startswith("data:")]
