"""One request in flight as the door's status tells it (a drain's estimate reads it)."""

from __future__ import annotations

from rigctl.gateway.exchange import Exchange
from rigctl.jsonio import loads_strict

FLIGHT_DETAIL = 64  # requests in flight told of one by one in a status (the longest a drain waits for is among them)


def flight(exchange: Exchange, now: float) -> dict[str, object]:
    """One request in flight as a drain's estimate needs it: how far its answer is, at what pace,
    and how long it may go (its max_tokens, read from the door's copy of its body, at the status
    only: never a parse a request)."""
    engine = exchange.engine
    out: dict[str, object] = {"client": exchange.client, "age_s": round(now - exchange.arrived, 3)}
    if engine is not None:
        out["streamed"] = engine.streamed
        out["events"] = engine.events
        if engine.first_byte:
            out["answering_s"] = round(now - engine.first_byte, 3)
    kept = exchange.kept
    if kept is not None and not kept.over and exchange.complete:
        try:
            body = loads_strict(kept.body())
        except (ValueError, RecursionError):
            body = None
        limit = (body.get("max_completion_tokens") or body.get("max_tokens")) if isinstance(body, dict) else None
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            out["max_tokens"] = limit
    return out
