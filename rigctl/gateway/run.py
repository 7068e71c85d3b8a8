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
from dataclasses import dataclass, field
from pathlib import Path

from rigctl.errors import BadInputError
from rigctl.gateway.bounds import ConnectionBounds, connection_cap, raise_descriptor_limit
from rigctl.gateway.control_server import ControlServer
from rigctl.gateway.door import Gateway, Resolver
from rigctl.gateway.hold import HoldBounds
from rigctl.gateway.memory import MemoryReturn
from rigctl.gateway.recording import Recording
from rigctl.gateway.silence import watch_silence
from rigctl.listen import is_loopback, shown

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
    allow_remote: bool = False  # a socket systemd passes may listen beyond loopback (then api_key is set)
    stop_after_s: float | None = None  # rigctl capture --duration: the door stops by itself after this long
    stop_after_kept: int | None = None  # rigctl capture --max-requests: ... once the recording kept this many
    connections: ConnectionBounds = field(default_factory=ConnectionBounds)


Ready = Callable[[str, int, bool], None]  # the address bound, and whether systemd passed its socket


def run(plan: DoorPlan, say: Callable[[str], None], ready: Ready | None = None) -> int:
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


async def _serve(plan: DoorPlan, say: Callable[[str], None], ready: Ready | None) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    descriptors = raise_descriptor_limit()
    cap = connection_cap(descriptors, plan.connections.max_connections)
    if plan.connections.max_connections > cap:
        say(f"[gateway] max_connections {plan.connections.max_connections} is more than {descriptors} descriptors allow: {cap}")
    memory = MemoryReturn()
    door = Gateway(
        plan.resolve, plan.bounds, plan.api_key, plan.silent_s, plan.recording, connection_bounds=plan.connections, cap=cap
    )
    control = ControlServer(door, shown(plan.host, plan.port))
    if plan.control is not None:
        await control.start(plan.control)
    try:
        bound = await _bind(plan, say, stop)
        if bound is None:
            return 0
        sock, activated = bound
        server = await loop.create_server(door.protocol, sock=sock, backlog=BACKLOG)
        host, port = sock.getsockname()[:2]
        if ready:
            ready(host, port, activated)
        chores = [
            loop.create_task(watch_silence(door.in_flight, door.silent_s, door.upstream_failed)),
            loop.create_task(_sweep(door, memory)),
        ]
        if plan.stop_after_s is not None:
            loop.call_later(plan.stop_after_s, stop.set)
        if plan.recording is not None and plan.stop_after_kept is not None:
            limit = plan.stop_after_kept
            plan.recording.on_kept = lambda kept: stop.set() if kept >= limit else None
        await stop.wait()
        for chore in chores:
            chore.cancel()
        server.close()
        door.begin_stop()
        cut_now = asyncio.Event()  # a second Ctrl-C or SIGTERM: the grace ends at once
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, cut_now.set)
        if door.in_flight:
            say(
                f"stopping: {len(door.in_flight)} answer(s) in flight get up to {plan.grace_s:g} s "
                "(Ctrl-C again cuts them now, each app told why)"
            )
        cut = await door.close(plan.grace_s, cut_now)
        return cut
    finally:
        await control.close()
        if plan.control is not None:
            with contextlib.suppress(OSError):
                plan.control.unlink()
        _ignore_signals_from_here(loop)


async def _sweep(door: Gateway, memory: MemoryReturn) -> None:
    """Once a second, the apps' connections past their timeouts closed (gateway/connections.py), and
    once idle after many bodies, their memory given back (gateway/memory.py)."""
    while True:
        await asyncio.sleep(1.0)
        door.connections.sweep()
        memory.after(door.body_bytes, idle=not door.in_flight and not door.hold.line)


def _ignore_signals_from_here(loop: asyncio.AbstractEventLoop) -> None:
    """The door has stopped; a second Ctrl-C or SIGTERM now only asks again. Left to the loop, its
    teardown puts the default handlers back, and a signal landing then killed the process with
    the door already closed (exit -2 for a stop that went well). Handed back here instead, the
    handler gone from the loop's table, so the loop's close does not restore the default."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(ValueError, RuntimeError):
            loop.remove_signal_handler(sig)
            signal.signal(sig, signal.SIG_IGN)


SD_LISTEN_FDS_START = 3  # sd_listen_fds(3): the first socket systemd passes


def activated_socket(environ: dict[str, str] | None = None) -> socket.socket | None:
    """The listening socket systemd passed (socket activation: rigctl-gateway.socket), else None.
    systemd keeps that socket open across a restart of the door, so the apps' connections wait in
    its backlog instead of being refused. Taken only when LISTEN_PID names this process, as
    sd_listen_fds(3) does, and the variables are then removed so no child inherits them."""
    env = os.environ if environ is None else environ
    if env.get("LISTEN_PID") != str(os.getpid()):
        return None
    try:
        count = int(env.get("LISTEN_FDS", "0"))
    except ValueError:
        return None
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        env.pop(name, None)
    if count < 1:
        return None
    sock = socket.socket(fileno=SD_LISTEN_FDS_START)
    if sock.type != socket.SOCK_STREAM:
        sock.detach()
        raise OSError(errno.EINVAL, "the socket systemd passed is not a stream socket (ListenStream= in the .socket unit)")
    os.set_inheritable(sock.fileno(), False)
    sock.setblocking(False)
    return sock


async def _bind(plan: DoorPlan, say: Callable[[str], None], stop: asyncio.Event) -> tuple[socket.socket, bool] | None:
    """The listening socket, and whether systemd passed it; None when a signal came first."""
    activated = activated_socket()
    if activated is not None:
        host = activated.getsockname()[0]
        if not is_loopback(host) and not (plan.allow_remote and plan.api_key):
            activated.close()
            raise BadInputError(
                f"the socket systemd passed listens on {host}, beyond loopback: the front door opens the rig there only "
                "with --allow-remote and an API key (--api-key-file, or $RIGCTL_GATEWAY_API_KEY)"
            )
        return activated, True
    said = False
    family = socket.AF_INET6 if ":" in plan.host else socket.AF_INET
    while True:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((plan.host, plan.port))
            sock.listen(BACKLOG)
            sock.setblocking(False)
            return sock, False
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
