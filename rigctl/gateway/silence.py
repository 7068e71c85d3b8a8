"""A vLLM that took a request and never answers: the front door asks its /health rather than let
the app wait to its own timeout (door.py runs this beside the data path)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rigctl.gateway.exchange import Exchange

HEALTH_S = 5.0  # for vLLM's /health to answer when a forwarded request has waited silent_s for its first byte


async def watch_silence(in_flight: set[Exchange], silent_s: float, failed: Callable[[Exchange, str], None]) -> None:
    """Forever: a forwarded request with no byte of answer after silent_s is a question, not a
    failure (a non-streamed generation says nothing until it is done); the door asks vLLM's
    /health on a connection of its own. An answer of any kind means vLLM lives and the request
    waits on; none within HEALTH_S means nothing will answer, and the app gets its 502 now
    rather than at its own timeout. One sweep a second, one probe per address."""
    if silent_s <= 0:
        return
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(min(1.0, silent_s))
        now = loop.time()
        silent: dict[tuple[tuple[str, int], bytes], list[Exchange]] = {}
        for exchange in in_flight:
            if not exchange.answered and exchange.engine is not None and now - exchange.sent >= silent_s:
                silent.setdefault((exchange.engine.key, exchange.engine.host), []).append(exchange)
        for (key, host), waiting in silent.items():
            if await _answers_health(key, host):
                for exchange in waiting:
                    exchange.sent = loop.time()  # asked again after another silent_s
                continue
            for exchange in waiting:
                if exchange.outcome is None and not exchange.answered:
                    assert exchange.engine is not None
                    exchange.engine.abort()
                    failed(
                        exchange,
                        f"vLLM at {host.decode()} took the request and sent nothing in {now - exchange.sent:.0f} s, "
                        f"and its /health gave no answer within {HEALTH_S:g} s",
                    )


async def _answers_health(key: tuple[str, int], host: bytes) -> bool:
    """Whether anything answers GET /health at `key` within HEALTH_S (any status: the server lives)."""
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(HEALTH_S):
            reader, writer = await asyncio.open_connection(*key)
            writer.write(b"GET /health HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
            return (await reader.readline()).startswith(b"HTTP/")
    except (OSError, TimeoutError):
        return False
    finally:
        if writer is not None:
            writer.close()
