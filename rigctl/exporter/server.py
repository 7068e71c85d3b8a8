"""Serving the collector over HTTP for Prometheus: read-only (a scrape is a GET; nothing is written
through it), one scrape at a time (the sampler is one), on loopback unless the owner said
otherwise on the command line."""

from __future__ import annotations

import socket
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from rigctl.exporter.collector import RigCollector


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # a line per scrape would fill a journal; errors still surface as the scraper's


def make_exporter(collector: RigCollector, host: str, port: int) -> WSGIServer:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server_class = type("ExporterServer", (WSGIServer,), {"address_family": family})
    return make_server(host, port, make_wsgi_app(registry), server_class=server_class, handler_class=_QuietHandler)
