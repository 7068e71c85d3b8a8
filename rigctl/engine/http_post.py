"""A POST of JSON and its whole answer, with the standard library's http.client: what the switch's
verification and the simulator's demo load send to a vLLM. httpx is not used for it: importing
httpx imports its CLI (and Rich, where click is installed), which every headless `rigctl switch`
would pay for (docs/guide/costs.md, the HTTP stacks)."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit


def post_json(
    base_url: str, endpoint: str, body: dict[str, Any], api_key: str | None, timeout_s: float, limit: int = 1 << 20
) -> tuple[int, str]:
    """(status, the answer's text up to `limit` bytes); status 0 and why when nothing answered."""
    parts = urlsplit(base_url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname or "127.0.0.1", parts.port, timeout=timeout_s)
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {api_key}"} if api_key else {})}
    try:
        connection.request("POST", parts.path.rstrip("/") + endpoint, json.dumps(body), headers)
        answer = connection.getresponse()
        return answer.status, answer.read(limit).decode("utf-8", errors="replace")
    except (OSError, http.client.HTTPException) as exc:
        return 0, f"no answer: {str(exc) or type(exc).__name__}"
    finally:
        connection.close()
