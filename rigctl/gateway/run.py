"""The front door as a process: listen for the apps, open the control channel, run until SIGTERM
or SIGINT (taken by the event loop's own signal handling: a flag and a wake-up, never a lock in a
handler), then give the answers in flight a grace and cut what is left."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rigctl.gateway.control import ControlServer
from rigctl.gateway.door import Gateway, Resolver
from rigctl.gateway.hold import HoldBounds
from rigctl.gateway.recording import Recording
from rigctl.listen import shown

PORT_RETRY_S = 0.25  # while vLLM still holds the apps' port (before its restart behind the door)
BACKLOG = 1024


@dataclass(frozen=True)
class DoorPlan:
    host: str
    port: int
    resolve: Resolver
    bounds: HoldBounds
    api_key: str | None = None
    control: Path | None = None  # the rig's control channel (None: a door in front of a --to server)
    grace_s: float = 30.0
    wait_for_port: bool = False  # the port may be vLLM's until the next restart moves it behind the door
    silent_s: float = 30.0  # an answer's first byte awaited this long before vLLM's /health is asked
    recording: Recording | None = None  # [gateway] record: every forwarded request in trace files


def run(plan: DoorPlan, say: Callable[[str], None], ready: Callable[[int], None] | None = None) -> int:
    """Serve until a signal; the number of answers cut at the end. The event loop is uvloop's
    where installed (a dependency on Linux), asyncio's otherwise or when RIGCTL_GATEWAY_LOOP says
    asyncio (benchmarks/bench_gateway.py --loop compares the two in one run)."""
    runner: Callable[..., int] = asyncio.run
    if os.environ.get("RIGCTL_GATEWAY_LOOP", "uvloop") != "asyncio":
        try:
            import uvloop

            runner = uvloop.run
        except ImportError:
            pass
    return runner(_serve(plan, say, ready))


async def _serve(plan: DoorPlan, say: Callable[[str], None], ready: Callable[[int], None] | None) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    door = Gateway(plan.resolve, plan.bounds, plan.api_key, plan.silent_s, plan.recording)
    control = ControlServer(door, shown(plan.host, plan.port))
    if plan.control is not None:
        await control.start(plan.control)
    try:
        sock = await _bind(plan, say, stop)
        if sock is None:
            return 0
        server = await loop.create_server(door.protocol, sock=sock, backlog=BACKLOG)
        port = sock.getsockname()[1]
        if ready:
            ready(port)
        silence = loop.create_task(door.watch_silence())
        await stop.wait()
        silence.cancel()
        server.close()
        say(f"stopping: {len(door.in_flight)} answer(s) in flight get up to {plan.grace_s:g} s")
        cut = await door.close(plan.grace_s)
        return cut
    finally:
        await control.close()
        if plan.control is not None:
            with contextlib.suppress(OSError):
                plan.control.unlink()


async def _bind(plan: DoorPlan, say: Callable[[str], None], stop: asyncio.Event) -> socket.socket | None:
    said = False
    family = socket.AF_INET6 if ":" in plan.host else socket.AF_INET
    while True:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((plan.host, plan.port))
            sock.listen(BACKLOG)
            sock.setblocking(False)
            return sock
        except OSError as exc:
            sock.close()
            if exc.errno != errno.EADDRINUSE or not plan.wait_for_port:
                raise
        if not said:
            say(
                f"{shown(plan.host, plan.port)} is still held (the vLLM that serves there now): the door opens "
                "as soon as it is free; `rigctl restart` moves vLLM behind it"
            )
            said = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), PORT_RETRY_S)
        if stop.is_set():
            return None
