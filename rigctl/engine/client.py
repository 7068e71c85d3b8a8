"""Talking to a vLLM server over HTTP: readiness, the served models, the version, /metrics.

Readiness follows vLLM's behaviour: connection refused while booting, /health 200 and
/v1/models listing the served name once ready, /health 503 when the engine died.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class Probe:
    reachable: bool  # something answered HTTP on the port
    healthy: bool  # /health 200
    models: tuple[str, ...]
    max_model_len: int | None
    status: int | None = None
    error: str | None = None

    def serves(self, name: str) -> bool:
        return self.healthy and name in self.models


class EngineClient:
    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 2.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, headers=headers, trust_env=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> EngineClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def probe(self) -> Probe:
        try:
            health = self._http.get("/health")
        except httpx.HTTPError as exc:
            return Probe(False, False, (), None, error=type(exc).__name__)
        if health.status_code != 200:
            return Probe(True, False, (), None, status=health.status_code)
        try:
            cards = self._http.get("/v1/models").json().get("data", [])
        except (httpx.HTTPError, ValueError):
            return Probe(True, True, (), None, status=200)
        names = tuple(str(c.get("id")) for c in cards)
        lengths = [c.get("max_model_len") for c in cards if isinstance(c.get("max_model_len"), int)]
        return Probe(True, True, names, lengths[0] if lengths else None, status=200)

    def version(self) -> str | None:
        try:
            return str(self._http.get("/version").json().get("version"))
        except (httpx.HTTPError, ValueError, AttributeError):
            return None

    def metrics_text(self) -> str:
        response = self._http.get("/metrics")
        response.raise_for_status()
        return response.text

    def get_json(self, path: str) -> Any:
        return self._http.get(path).json()
