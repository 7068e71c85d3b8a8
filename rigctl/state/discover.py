"""Who listens on a port, and whether it is the server rigctl started.

Every server rigctl launches carries RIGCTL_BOOT_ID (a token fresh for each boot) and
RIGCTL_PROFILE in its environment, so a listener can be told apart from another server
that answers with the same model name, and a server whose record was lost (a damaged
server.json) can still be found: its API server listens on a port and has the token.
Reading another user's environment needs privileges; what cannot be read is "unknown",
never a guess.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

import psutil

from rigctl.proc import start_id

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
    return [
        Listener(c.pid, c.laddr.ip, c.laddr.port)
        for c in connections
        if c.status == psutil.CONN_LISTEN and c.laddr and (port is None or c.laddr.port == port)
    ]


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
    """A running server that carries rigctl's boot token, found without a (live) record."""

    pid: int  # the process rigctl started (its process group leader)
    listener_pid: int | None  # None: still booting, not listening yet
    host: str
    port: int | None
    boot_id: str
    profile: str | None
    log_path: str | None
    create_time: float | None
    argv: tuple[str, ...]
    start_id: str | None = None
    env: dict[str, str] = field(default_factory=dict, compare=False, repr=False)


def _argv_value(argv: tuple[str, ...], flag: str) -> str | None:
    for i, word in enumerate(argv):
        if word == flag and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(flag + "="):
            return word.partition("=")[2]
    return None


def served_names_of(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The names a vLLM command line serves under: --served-model-name's, else its model."""
    if "--served-model-name" in argv:
        at = argv.index("--served-model-name") + 1
        names = []
        while at < len(argv) and not argv[at].startswith("-"):
            names.append(argv[at])
            at += 1
        if names:
            return tuple(names)
    model = _argv_value(argv, "--model")
    if model is None and "serve" in argv:
        at = argv.index("serve") + 1
        model = argv[at] if at < len(argv) and not argv[at].startswith("-") else None
    return (model,) if model else ()


def find_rigctl_servers(state_dir: str) -> list[FoundServer]:
    """Every process group whose leader's environment carries a boot token of the rigctl whose
    state lives in `state_dir`, listening or still booting (read from the environment, which no
    restored record or clock step can change)."""
    found: dict[str, FoundServer] = {}
    listening = {listener.pid: listener for listener in listeners() if listener.pid is not None}
    members: dict[str, list[int]] = {}
    for proc in psutil.process_iter():
        try:
            env = proc.environ()
        except (psutil.Error, OSError):
            continue
        boot = env.get(BOOT_ID_VAR)
        if not boot or env.get(STATE_VAR) != state_dir:
            continue
        members.setdefault(boot, []).append(proc.pid)
        leader = _group_of(proc.pid) or proc.pid
        if boot in found and found[boot].pid == leader:
            continue
        try:
            head = psutil.Process(leader)
            if head.status() == psutil.STATUS_ZOMBIE:
                continue
            created, argv = head.create_time(), tuple(head.cmdline())
        except psutil.Error:
            continue
        found[boot] = FoundServer(
            pid=leader,
            listener_pid=None,
            host="127.0.0.1",
            port=None,
            boot_id=boot,
            profile=env.get(PROFILE_VAR),
            log_path=env.get(LOG_VAR),
            create_time=created,
            argv=argv,
            start_id=start_id(leader),
            env=env,
        )
    out = []
    for boot, server in found.items():
        listener = next((listening[pid] for pid in members[boot] if pid in listening), None)
        if listener is not None:
            server = dataclasses.replace(server, listener_pid=listener.pid, host=listener.host, port=listener.port)
        else:
            port = _argv_value(server.argv, "--port")
            server = dataclasses.replace(
                server, port=int(port) if port and port.isdigit() else None, host=_argv_value(server.argv, "--host") or "127.0.0.1"
            )
        out.append(server)
    return out
