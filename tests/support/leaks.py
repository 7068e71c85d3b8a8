"""What a test session started and left running: every process that carries the session's token
in its environment (each pytest process sets its own; children inherit it through rigctl, the
simulator and the servers it starts), still alive when the session ends. A leaked simulator is a
defect of its own and a load on every later test of a 2-core machine.

A session killed from outside (a CI timeout, ^C twice, the OOM killer) never reaches its end, so
the token also names the pytest process that owns it: the next session reaps, at its start,
whatever carries a token whose owner is gone."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

import psutil

TOKEN_VAR = "PYTEST_SESSION_TOKEN"  # not RIGCTL_*: the test rigs pass their children no RIGCTL_ variable of the caller's
OWNER_VAR = "PYTEST_SESSION_OWNER"  # the pid of the pytest process the token belongs to


def mark_this_session() -> str:
    """A fresh token in this process's environment, for everything it starts from now on."""
    token = uuid.uuid4().hex
    os.environ[TOKEN_VAR] = token
    os.environ[OWNER_VAR] = str(os.getpid())
    return token


def _owner_alive(owner: str, proc: psutil.Process) -> bool:
    """The owning pytest process still runs. (Its own /proc environ is the one it was started
    with, without the token it set itself; a pid reused since is a process younger than `proc`.)"""
    try:
        return psutil.Process(int(owner)).create_time() <= proc.create_time()
    except (psutil.Error, OSError, ValueError):
        return False


def _live(match: Callable[[dict[str, str], psutil.Process], bool]) -> list[psutil.Process]:
    """The live processes (not zombies), this one aside, whose environment and self `match`."""
    out = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and match(proc.environ(), proc):
                out.append(proc)
        except (psutil.Error, OSError):  # gone meanwhile, or not ours to read
            continue
    return out


def carrying(token: str) -> list[psutil.Process]:
    """The live processes started with this token."""
    return _live(lambda env, proc: env.get(TOKEN_VAR) == token)


def orphans() -> list[psutil.Process]:
    """Live processes carrying a session token whose owning pytest process is gone."""

    def orphaned(env: dict[str, str], proc: psutil.Process) -> bool:
        owner = env.get(OWNER_VAR)
        return bool(env.get(TOKEN_VAR)) and owner is not None and not _owner_alive(owner, proc)

    return _live(orphaned)


def describe(proc: psutil.Process) -> str:
    try:
        started_by = proc.environ().get("PYTEST_CURRENT_TEST", "no test")
        return f"pid {proc.pid} ({' '.join(proc.cmdline())[:160]}), started during {started_by}"
    except (psutil.Error, OSError):
        return f"pid {proc.pid}"


def _kill(procs: list[psutil.Process]) -> list[str]:
    """Each described, then killed; one that ended meanwhile (a zombie, or gone) is not named."""
    left = []
    for proc in procs:
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except psutil.Error:
            continue
        left.append(describe(proc))
        try:
            proc.kill()
        except psutil.Error:
            pass
    return left


def reap_orphans() -> list[str]:
    """Kill what an earlier, killed session left running."""
    return _kill(orphans())


def reap_leftovers(token: str, grace_s: float) -> list[str]:
    """Those still running `grace_s` after the session's end (a stop in flight may still be
    ending one), each described, then killed so that they load nothing after this session."""
    procs = carrying(token)
    if not procs:
        return []
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    return _kill(alive)
