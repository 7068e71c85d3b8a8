"""Who listens on a port, and whether it is the server rigctl started.

Every server rigctl launches carries RIGCTL_BOOT_ID (a token fresh for each boot) and
RIGCTL_PROFILE in its environment, so a listener can be told apart from another server
that answers with the same model name, and a server whose record was lost (a damaged
server.json) can still be found: its API server listens on a port and has the token.
Reading another user's environment needs privileges; what cannot be read is "unknown",
never a guess.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

BOOT_ID_VAR = "RIGCTL_BOOT_ID"
PROFILE_VAR = "RIGCTL_PROFILE"
LOG_VAR = "RIGCTL_LOG"
# The state dir of the rigctl that started it: the servers of another user, or of another
# rigctl set-up on the same box, are never adopted.
STATE_VAR = "RIGCTL_SERVER_STATE"


@dataclass(frozen=True)
class Listener:
    pid: int | None  # None: the kernel did not say (another user's or namespace's socket)
    host: str
    port: int


def listeners(port: int | None = None) -> list[Listener]:
    """TCP listeners (on `port`, or all)."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return []
    return [Listener(c.pid, c.laddr.ip, c.laddr.port) for c in connections
            if c.status == psutil.CONN_LISTEN and c.laddr and (port is None or c.laddr.port == port)]


def holder(port: int) -> str | None:
    """'pid 123 (python3)' for whoever listens on `port`, 'another process' when the kernel
    does not say who; None when nothing listens."""
    found = listeners(port)
    if not found:
        return None
    for listener in found:
        if listener.pid:
            try:
                return f"pid {listener.pid} ({psutil.Process(listener.pid).name()})"
            except psutil.Error:
                return f"pid {listener.pid}"
    return "another process"


def process_environ(pid: int) -> dict[str, str] | None:
    try:
        return psutil.Process(pid).environ()
    except (psutil.Error, OSError):
        return None


def listener_is(port: int, boot_id: str | None, pid: int | None) -> bool | None:
    """Is the listener on `port` the server of this boot? True, False, or None (cannot tell:
    no pid from the kernel, no environment readable, or a record without a token)."""
    verdicts: list[bool] = []
    for listener in listeners(port):
        if listener.pid is None:
            continue
        if pid is not None and (listener.pid == pid or _group_of(listener.pid) == pid):
            return True
        env = process_environ(listener.pid)
        if env is None or boot_id is None:
            continue
        verdicts.append(env.get(BOOT_ID_VAR) == boot_id)
    if any(verdicts):
        return True
    return False if verdicts else None


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


@dataclass(frozen=True)
class FoundServer:
    """A running server that carries rigctl's boot token, found without a record."""

    pid: int  # the process rigctl started (its process group leader)
    listener_pid: int
    host: str
    port: int
    boot_id: str
    profile: str | None
    log_path: str | None
    create_time: float | None
    argv: tuple[str, ...]


def find_rigctl_servers(state_dir: str) -> list[FoundServer]:
    """Every listening process whose environment carries a boot token of the rigctl whose state
    lives in `state_dir`."""
    found: dict[str, FoundServer] = {}
    for listener in listeners():
        if listener.pid is None:
            continue
        env = process_environ(listener.pid)
        if not env or BOOT_ID_VAR not in env or env.get(STATE_VAR) != state_dir:
            continue
        leader = _group_of(listener.pid) or listener.pid
        try:
            proc = psutil.Process(leader)
            created, argv = proc.create_time(), tuple(proc.cmdline())
        except psutil.Error:
            leader, created, argv = listener.pid, None, ()
        boot = env[BOOT_ID_VAR]
        if boot not in found:
            found[boot] = FoundServer(pid=leader, listener_pid=listener.pid, host=listener.host, port=listener.port,
                                      boot_id=boot, profile=env.get(PROFILE_VAR), log_path=env.get(LOG_VAR),
                                      create_time=created, argv=argv)
    return list(found.values())
