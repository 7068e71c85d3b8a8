"""The lean GET against a real socket server on 127.0.0.1 that answers as scripted: the
framings HTTP servers use, kept-alive reuse, servers closing idle connections, garbage."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rigctl.engine.client import EngineClient, EngineHTTPError
from rigctl.engine.http_get import HttpGet, ProtocolError

Answer = Callable[[bytes], bytes | None]  # request head -> raw response; None closes without answering


class ScriptedServer:
    """Accepts connections; each request on a connection gets the next answer of the script."""

    def __init__(self, answers: list[Answer], close_after_each: bool = False) -> None:
        self.answers = answers
        self.close_after_each = close_after_each
        self.requests: list[bytes] = []
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while self.answers:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                buffer = b""
                while self.answers:
                    while b"\r\n\r\n" not in buffer:
                        data = conn.recv(65536)
                        if not data:
                            break
                        buffer += data
                    if b"\r\n\r\n" not in buffer:
                        break
                    head, _, buffer = buffer.partition(b"\r\n\r\n")
                    self.requests.append(head)
                    response = self.answers.pop(0)(head)
                    if response is None:
                        break
                    conn.sendall(response)
                    if self.close_after_each:
                        break

    def close(self) -> None:
        self.listener.close()


@contextmanager
def scripted(answers: list[Answer], close_after_each: bool = False) -> Iterator[ScriptedServer]:
    server = ScriptedServer(answers, close_after_each)
    try:
        yield server
    finally:
        server.close()


def fixed(raw: bytes) -> Answer:
    return lambda head: raw


def length_framed(body: bytes, status: str = "200 OK", extra: bytes = b"") -> Answer:
    return fixed(
        b"HTTP/1.1 "
        + status.encode()
        + b"\r\nContent-Type: text/plain\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n"
        + extra
        + b"\r\n"
        + body
    )


def test_kept_alive_connection_serves_several_requests() -> None:
    with scripted([length_framed(b"first"), length_framed(b"second")]) as server:
        get = HttpGet("127.0.0.1", server.port, 2.0, {"Authorization": "Bearer k"})
        assert get.get("/metrics") == (200, b"first")
        assert get.get("/health") == (200, b"second")
        get.close()
    assert server.connections == 1
    assert server.requests[0].startswith(b"GET /metrics HTTP/1.1\r\n")
    assert b"Authorization: Bearer k" in server.requests[0] and b"Host: 127.0.0.1:" in server.requests[0]


def test_chunked_body_with_extension_and_trailer() -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: yes\r\n\r\n"
    with scripted([fixed(raw), length_framed(b"after")]) as server:
        get = HttpGet("127.0.0.1", server.port, 2.0, {})
        assert get.get("/") == (200, b"hello, world")
        assert get.get("/") == (200, b"after")  # the trailer was consumed: the next response parses
    assert server.connections == 1


def test_connection_close_and_body_to_eof_reconnect_next_time() -> None:
    answers = [
        length_framed(b"one", extra=b"Connection: close\r\n"),
        fixed(b"HTTP/1.0 200 OK\r\n\r\nto the end"),
        length_framed(b"three"),
    ]
    with scripted(answers, close_after_each=True) as server:
        get = HttpGet("127.0.0.1", server.port, 2.0, {})
        assert [get.get("/")[1] for _ in range(3)] == [b"one", b"to the end", b"three"]
    assert server.connections == 3


def test_an_idle_connection_the_server_dropped_is_reopened_once() -> None:
    with scripted([length_framed(b"first"), lambda head: None, length_framed(b"again")]) as server:
        get = HttpGet("127.0.0.1", server.port, 2.0, {})
        assert get.get("/") == (200, b"first")
        assert get.get("/") == (200, b"again")  # the dropped one was retried on a fresh connection
    assert server.connections == 2


def test_error_status_keeps_its_body() -> None:
    with scripted([length_framed(b"engine dead", status="503 Service Unavailable")]) as server:
        assert HttpGet("127.0.0.1", server.port, 2.0, {}).get("/health") == (503, b"engine dead")


@pytest.mark.parametrize(
    "raw",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
def test_garbage_is_a_protocol_error_and_the_client_says_so(raw: bytes) -> None:
    with scripted([fixed(raw)]) as server:
        with pytest.raises(ProtocolError):
            HttpGet("127.0.0.1", server.port, 2.0, {}).get("/")
    with scripted([fixed(raw)]) as server:
        with pytest.raises(EngineHTTPError, match="not an HTTP answer: "):
            EngineClient(f"http://127.0.0.1:{server.port}").request("/metrics")


def test_a_response_cut_short_is_an_error_not_a_short_body() -> None:
    with scripted([fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")], close_after_each=True) as server:
        with pytest.raises(ConnectionResetError):
            HttpGet("127.0.0.1", server.port, 2.0, {}).get("/")


def test_refused_port_is_reported_by_kind() -> None:
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    probe = EngineClient(f"http://127.0.0.1:{port}").probe()
    assert not probe.reachable and probe.error == "connection refused (nothing listens there)"


def test_the_client_sends_its_path_prefix_and_key() -> None:
    with scripted([length_framed(b"# no samples\n")]) as server:
        client = EngineClient(f"http://127.0.0.1:{server.port}/prefix/", api_key="sk-secret")
        assert client.metrics_text() == "# no samples\n"
        client.close()
    assert server.requests[0].startswith(b"GET /prefix/metrics HTTP/1.1")
    assert b"Authorization: Bearer sk-secret" in server.requests[0]


FRAMINGS = [
    ("content-length", [length_framed(b"a body of known length")]),
    ("chunked", [fixed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nvllm\r\n1\r\n:\r\n0\r\n\r\n")]),
    ("to-eof", [fixed(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the server closes")]),
    ("connection-close", [length_framed(b"then gone", extra=b"Connection: close\r\n")]),
    ("no-content", [fixed(b"HTTP/1.1 204 No Content\r\n\r\n")]),
    ("error", [length_framed(b'{"detail":"Not Found"}', status="404 Not Found")]),
]


@pytest.mark.parametrize("name,answers", FRAMINGS, ids=[f[0] for f in FRAMINGS])
def test_the_lean_get_answers_what_httpx_answers(name: str, answers: list[Answer]) -> None:
    """The replacement held to the library it replaces: same status, same body, per framing."""
    import httpx

    with scripted(list(answers), close_after_each=True) as server:
        ours = HttpGet("127.0.0.1", server.port, 2.0, {}).get("/metrics")
    with scripted(list(answers), close_after_each=True) as server:
        theirs = httpx.get(f"http://127.0.0.1:{server.port}/metrics", timeout=2.0, trust_env=False)
    assert ours == (theirs.status_code, theirs.content)


def test_an_ipv6_literal_is_bracketed_in_the_host_header() -> None:
    try:
        listener = socket.create_server(("::1", 0), family=socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    port = listener.getsockname()[1]
    seen: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            seen.append(conn.recv(65536))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    threading.Thread(target=serve, daemon=True).start()
    with listener:
        client = EngineClient(f"http://[::1]:{port}")
        assert client.request("/health") == (200, b"ok")
    assert f"Host: [::1]:{port}\r\n".encode() in seen[0]


def test_https_goes_through_the_same_get(tmp_path: Path) -> None:
    import shutil
    import ssl
    import subprocess

    if not shutil.which("openssl"):
        pytest.skip("no openssl to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with server_side.wrap_socket(conn, server_side=True) as tls:
            tls.recv(65536)
            tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecure")

    threading.Thread(target=serve, daemon=True).start()
    with listener:
        trusting = ssl.create_default_context(cafile=str(cert))
        assert HttpGet("127.0.0.1", port, 5.0, {}, tls=trusting).get("/metrics") == (200, b"secure")
