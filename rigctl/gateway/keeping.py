"""What the door keeps of a forwarded generation request once it ends: its prompt counted for the
client's prefix reuse, and, while recording, its trace line (a bench replays them)."""

from __future__ import annotations

from typing import Any

from rigctl.gateway.exchange import Exchange
from rigctl.gateway.recording import Recording
from rigctl.gateway.reuse import PrefixReuse, prompt_text
from rigctl.jsonio import loads_strict


def keep_ended(exchange: Exchange, outcome: str, reuse: PrefixReuse, recording: Recording | None) -> None:
    """A forwarded generation request, ended: its prompt counted for the client's prefix reuse,
    and, while recording, its trace line."""
    kept = exchange.kept
    assert kept is not None
    body: dict[str, Any] | None = None
    unkept = "its body was over 16 MiB" if kept.over else ""
    if not kept.over:
        try:
            parsed = loads_strict(kept.body())
            body = parsed if isinstance(parsed, dict) else None
        except (ValueError, RecursionError):
            unkept = "its body is not strict JSON (NaN, Infinity or not JSON): vLLM got it as sent"
    endpoint = exchange.target.split(b"?", 1)[0].decode("latin-1")
    text = prompt_text(endpoint, body) if body is not None else None
    reused = reuse.add(exchange.client, text) if text is not None else None
    if recording is None:
        return
    entry: dict[str, Any] = {"endpoint": endpoint, "body": body or {}, "status": kept.status}
    entry["stream"] = bool(body and body.get("stream") is True)
    answer = kept.answer
    if answer is not None:
        answer.finish()
        entry.update(answer.usage())
    error = {
        "cut": "cut before its answer ended (a drain's deadline, the door's stop, or vLLM closed it)",
        "gone": "the app hung up",
        "failed": "vLLM did not answer",
    }
    if outcome in error or (answer is not None and answer.error):
        entry["error"] = error.get(outcome) or (answer.error if answer else "")
    entry["client"] = exchange.client
    if text is not None and reused is not None:
        entry["prompt_chars"], entry["reused_chars"] = len(text), reused
    if unkept:
        entry["unkept"] = unkept
    recording.keep(kept.wall, entry)
