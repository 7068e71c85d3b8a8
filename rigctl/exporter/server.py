"""Serving the collector over HTTP for Prometheus: read-only (a scrape is a GET; nothing is written
through it), on loopback unless the owner said otherwise on the command line.

prometheus_client's WSGI app on wsgiref, with a thread per connection: a connection that sends
nothing (a port scanner, a half-open load balancer probe) waits in its own thread, up to READ_S,
and never delays a scrape. The collection itself stays one at a time (the sampler is one), so
two scrapes at once are answered one after the other. At most CONNECTIONS are served at once;
at the cap, the connection that has waited longest without sending its request line gives way
to the new one (it is shut down, which ends its thread at once), so idle or half-sent connections
can fill the slots but never starve a scrape; only when every slot holds a request being answered
is the new connection closed.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import StartResponse, WSGIEnvironment

from prometheus_client import CollectorRegistry, make_wsgi_app

from rigctl.exporter.collector import RigCollector

READ_S = 10.0  # for a request's head to arrive (Prometheus sends it at once)
CONNECTIONS = 32


SLOT_WAIT_S = 2.0  # for the slot a shut-down silent connection frees


class _QuietHandler(WSGIRequestHandler):
    timeout = READ_S  # socketserver's per-connection socket timeout: a silent client is dropped
    server: _ExporterServer

    def parse_request(self) -> bool:
        self.server.asked(self.request)  # its request line came: it no longer gives way at the cap
        return super().parse_request()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a line per scrape would fill a journal; errors still surface as the scraper's


class _ExporterServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a stop never waits on a silent connection
    block_on_close = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.slots = threading.BoundedSemaphore(CONNECTIONS)
        self._silent: dict[socket.socket, None] = {}  # served, no request line yet: the oldest first
        self._silent_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def asked(self, request: socket.socket) -> None:
        with self._silent_lock:
            self._silent.pop(request, None)

    def _make_room(self) -> bool:
        """At the cap: the oldest silent connection shut down, and its slot taken (False: every slot
        answers a request, or the freed one did not come in time)."""
        with self._silent_lock:
            oldest = next(iter(self._silent), None)
            if oldest is not None:
                del self._silent[oldest]
        if oldest is None:
            return False
        with contextlib.suppress(OSError):
            oldest.shutdown(socket.SHUT_RDWR)  # its thread's read ends now, and the slot comes back
        return self.slots.acquire(timeout=SLOT_WAIT_S)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False) and not self._make_room():
            self.shutdown_request(request)  # every slot answers a request: closed at once, never queued
            return
        with self._silent_lock:
            self._silent[request] = None
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.asked(request)
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up mid-answer, a timeout: the scraper sees it; no traceback on stderr


class _V6ExporterServer(_ExporterServer):
    address_family = socket.AF_INET6


def make_exporter(collector: RigCollector, host: str, port: int) -> WSGIServer:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    app = make_wsgi_app(registry)
    collecting = threading.Lock()

    def one_at_a_time(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        with collecting:  # the sampler is one: scrapes at once are answered in turn
            return list(app(environ, start_response))

    server_class = _V6ExporterServer if ":" in host else _ExporterServer
    return make_server(host, port, one_at_a_time, server_class=server_class, handler_class=_QuietHandler)
