"""Servers on 127.0.0.1 that misbehave the ways a wedged or wrong endpoint does: one that
accepts and never answers, one that trickles a byte at a time, one that speaks another
protocol, one that answers 200 with nothing a vLLM would say."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class BadServer:
    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self._held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        self._held.append(conn)  # kept open (the never-answering server holds every connection)
        try:
            conn.recv(65536)
            if self.behaviour == "silent":
                self._stop.wait(120)
            elif self.behaviour == "trickle":
                body = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"# x\n" * 250
                for byte in body:
                    if self._stop.wait(1.0):
                        return
                    conn.sendall(bytes([byte]))
            elif self.behaviour == "garbage":
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
            elif self.behaviour == "empty":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nContent-Type: text/plain\r\n\r\n")
            elif self.behaviour == "random":
                body = bytes(random.Random(7).getrandbits(8) for _ in range(4096))
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            elif self.behaviour == "html":
                body = b"<!doctype html>\n<html><head><title>Router login</title></head><body>hi</body></html>\n"
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            elif self.behaviour == "not-vllm":
                body = b'# HELP python_info x\npython_info{version="3.11"} 1.0\nprocess_cpu_seconds_total 1.5\n'
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        except OSError:
            pass

    def close(self) -> None:
        self._stop.set()
        self.listener.close()
        for conn in self._held:
            try:
                conn.close()
            except OSError:
                pass


@contextmanager
def bad_server(behaviour: str) -> Iterator[BadServer]:
    server = BadServer(behaviour)
    try:
        yield server
    finally:
        server.close()
        time.sleep(0.05)
