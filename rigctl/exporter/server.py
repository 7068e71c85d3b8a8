"""Serving the collector over HTTP for Prometheus: read-only (a scrape is a GET; nothing is written
through it), one scrape at a time (the sampler is one), on loopback unless the owner said
otherwise on the command line."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from rigctl.errors import BadInputError
from rigctl.exporter.collector import RigCollector


def parse_listen(text: str, where: str) -> tuple[str, int]:
    """HOST:PORT ([v6]:PORT for IPv6) -> (host, port); BadInputError naming `where` otherwise."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInputError(f"{where}: {text!r} is not HOST:PORT (e.g. 127.0.0.1:9477)")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # a line per scrape would fill a journal; errors still surface as the scraper's


def make_exporter(collector: RigCollector, host: str, port: int) -> WSGIServer:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server_class = type("ExporterServer", (WSGIServer,), {"address_family": family})
    return make_server(host, port, make_wsgi_app(registry), server_class=server_class, handler_class=_QuietHandler)
