"""Talking to a vLLM server over HTTP: readiness, the served models, the version, /metrics.

Readiness follows vLLM's behaviour: connection refused while booting, /health 200 and
/v1/models listing the served name once ready, /health 503 when the engine died.

One kept-alive connection, read by engine/http_get.py (why not httpx: see there), for http and
https alike. Only 127.0.0.1-style endpoints are expected; no proxies.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rigctl.engine.http_get import HttpGet, ProtocolError
from rigctl.engine.metrics import EngineSnapshot, snapshot
from rigctl.engine.prom import parse
from rigctl.vllm.metric_names import SNAPSHOT_NAMES


@dataclass(frozen=True)
class Probe:
    reachable: bool  # something answered HTTP on the port
    healthy: bool  # /health 200
    models: tuple[str, ...]
    max_model_len: int | None
    status: int | None = None
    error: str | None = None
    unauthorized: bool = False  # /v1/models answered 401: the server wants a key this client lacks

    def serves(self, name: str) -> bool:
        return self.healthy and name in self.models


class EngineHTTPError(Exception):
    """The endpoint did not answer (refused, timed out, reset) or answered with an error status."""

    def __init__(self, kind: str, status: int | None = None) -> None:
        super().__init__(kind if status is None else f"HTTP {status}")
        self.kind = kind
        self.status = status


def describe(exc: BaseException) -> str:
    """A failed request in words: 'connection refused', 'timed out: ...', 'not HTTP: ...'."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (nothing listens there)"
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return f"timed out{': ' + str(exc) if str(exc) and str(exc) != 'timed out' else ''}"
    if isinstance(exc, ProtocolError):
        return f"not an HTTP answer: {exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


class EngineClient:
    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 2.0) -> None:
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        https = parts.scheme == "https"
        self._prefix = parts.path.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = HttpGet(parts.hostname or "127.0.0.1", parts.port or (443 if https else 80), timeout, headers, tls=https)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> EngineClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, path: str) -> tuple[int, bytes]:
        """GET `path`: (status, body); EngineHTTPError when there is no answer (a dropped
        kept-alive connection is retried once, fresh, inside HttpGet)."""
        try:
            return self._http.get(self._prefix + path)
        except (OSError, ProtocolError) as exc:
            raise EngineHTTPError(describe(exc)) from exc

    def get_json(self, path: str) -> Any:
        status, body = self.request(path)
        if status != 200:
            raise EngineHTTPError("status", status)
        return json.loads(body)

    def probe(self) -> Probe:
        try:
            status, _ = self.request("/health")
        except EngineHTTPError as exc:
            return Probe(False, False, (), None, error=exc.kind)
        if status != 200:
            return Probe(True, False, (), None, status=status)
        try:
            cards = self.get_json("/v1/models").get("data", [])
        except EngineHTTPError as exc:
            return Probe(True, True, (), None, status=200, unauthorized=exc.status == 401)
        except (ValueError, AttributeError):
            return Probe(True, True, (), None, status=200)
        names = tuple(str(c.get("id")) for c in cards)
        lengths = [c.get("max_model_len") for c in cards if isinstance(c.get("max_model_len"), int)]
        return Probe(True, True, names, lengths[0] if lengths else None, status=200)

    def version(self) -> str | None:
        try:
            return str(self.get_json("/version").get("version"))
        except (EngineHTTPError, ValueError, AttributeError):
            return None

    def metrics_text(self) -> str:
        status, body = self.request("/metrics")
        if status != 200:
            raise EngineHTTPError("status", status)
        return body.decode("utf-8", errors="replace")

    def metrics(self, timestamp: float, names: Collection[str] = SNAPSHOT_NAMES) -> EngineSnapshot:
        """/metrics read into a snapshot, parsing only `names`; EngineHTTPError or ExpositionError."""
        return snapshot(parse(self.metrics_text(), names=names), timestamp)
