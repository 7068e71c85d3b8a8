"""What a rig serves, read live from where its apps connect (`[rigs.NAME] url`, its front door):
each served model's name and the context it was started with (vLLM's /v1/models `max_model_len`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from rigctl.engine.http_get import HttpGet, ProtocolError
from rigctl.redact import redact_text
from rigctl.rig_table import RemoteRig

READ_LIMIT = 1024 * 1024  # a /v1/models answer is a few hundred bytes per model


@dataclass(frozen=True)
class ServedModel:
    name: str
    max_model_len: int | None  # None: the server did not say (not a vLLM)


@dataclass(frozen=True)
class RigReading:
    rig: str
    url: str
    api_key_env: str
    models: tuple[ServedModel, ...] = ()
    problem: str = ""  # why nothing was read ("" when it answered)


def read_rig(rig: RemoteRig, timeout_s: float = 5.0) -> RigReading:
    """GET {url}/v1/models with the rig's key (from its environment variable, when set here)."""
    headers = {}
    key = os.environ.get(rig.api_key_env) if rig.api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    base = RigReading(rig.name, rig.url, rig.api_key_env)
    missing = f" (${rig.api_key_env} is not set here)" if rig.api_key_env and not key else ""
    where = urlsplit(rig.url)
    https = where.scheme == "https"
    # the core's one GET (engine/http_get.py): one deadline for the whole answer, its size bounded
    client = HttpGet(where.hostname or "", where.port or (443 if https else 80), timeout_s, headers, tls=https, max_body=READ_LIMIT)
    try:
        status, body = client.get("/v1/models")
    except (OSError, ProtocolError) as exc:
        return replace(base, problem=f"not answering ({type(exc).__name__}: {redact_text(str(exc)) or 'no reply'})")
    finally:
        client.close()
    if status in (401, 403):
        return replace(base, problem=f"refused the key: HTTP {status}{missing}")
    if status != 200:
        return replace(base, problem=f"answered HTTP {status} to /v1/models")
    try:
        cards = json.loads(body)["data"]
        models = tuple(
            ServedModel(str(card["id"]), card["max_model_len"] if isinstance(card.get("max_model_len"), int) else None)
            for card in cards
        )
    except (ValueError, KeyError, TypeError):
        return replace(base, problem="its /v1/models is not an OpenAI model list")
    if not models:
        return replace(base, problem="serves no model")
    return RigReading(rig.name, rig.url, rig.api_key_env, models)
