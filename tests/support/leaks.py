"""What a test session started and left running: every process that carries the session's token
in its environment (each pytest process sets its own; children inherit it through rigctl, the
simulator and the servers it starts), still alive when the session ends. A leaked simulator is a
defect of its own and a load on every later test of a 2-core machine."""

from __future__ import annotations

import os
import uuid

import psutil

TOKEN_VAR = "PYTEST_SESSION_TOKEN"  # not RIGCTL_*: the test rigs pass their children no RIGCTL_ variable of the caller's


def mark_this_session() -> str:
    """A fresh token in this process's environment, for everything it starts from now on."""
    token = uuid.uuid4().hex
    os.environ[TOKEN_VAR] = token
    return token


def carrying(token: str) -> list[psutil.Process]:
    """The live processes (not zombies) started with this token, this process aside."""
    out = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(TOKEN_VAR) == token and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except (psutil.Error, OSError):  # gone meanwhile, or not ours to read
            continue
    return out


def describe(proc: psutil.Process) -> str:
    try:
        started_by = proc.environ().get("PYTEST_CURRENT_TEST", "no test")
        return f"pid {proc.pid} ({' '.join(proc.cmdline())[:160]}), started during {started_by}"
    except (psutil.Error, OSError):
        return f"pid {proc.pid}"


def reap_leftovers(token: str, grace_s: float) -> list[str]:
    """Those still running `grace_s` after the session's end (a stop in flight may still be
    ending one), each described, then killed so that they load nothing after this session."""
    procs = carrying(token)
    if not procs:
        return []
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    left = []
    for proc in alive:
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
