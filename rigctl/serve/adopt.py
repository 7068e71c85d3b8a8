"""Taking over a vLLM server rigctl did not start (`rigctl adopt`): recorded as serving, so the next
switch, restart or stop drains it and stops it as if rigctl had started it. Refused, with the
reason, wherever rigctl could not stop it properly: another user's process, one in a container or
under a systemd unit (their own launchers stop those), one that does not lead its process group
(rigctl stops a server by its group: the group of a shell would take the shell with it), one that
does not answer. Nothing is written before every check has passed."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from rigctl.engine.client import EngineClient
from rigctl.errors import BadInputError, RigctlError
from rigctl.proc import start_id, start_time
from rigctl.profiles.import_sources import is_vllm_launch
from rigctl.redact import redact_argv
from rigctl.serve.context import ServeContext
from rigctl.serve.lock import RigLock
from rigctl.state.journal import Ending, append_ending
from rigctl.state.statefiles import ActiveState, ServerRecord, read_record_once, write_record, write_state
from rigctl.vllm.argv import read_serve_argv
from rigctl.vllm.options import OptionTable

DEFAULT_PORT = 8000  # vLLM's, when the command line names none
CONTAINER_MARKS = ("docker", "containerd", "kubepods", "libpod", "lxc")


@dataclass(frozen=True)
class Found:
    pid: int
    argv: tuple[str, ...]


def vllm_servers() -> list[Found]:
    """Every process that is a `vllm serve` (or the api_server module), its own engine workers
    left out (they carry the parent's command line under another name)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "ppid"]):
        argv = tuple(proc.info["cmdline"] or ())
        if argv and is_vllm_launch(argv):
            found.append(Found(proc.info["pid"], argv))
    pids = {f.pid for f in found}
    return [f for f in found if _parent(f.pid) not in pids]


def _parent(pid: int) -> int | None:
    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return None


def chosen_server(pid: int | None) -> Found:
    if pid is not None:
        try:
            argv = tuple(psutil.Process(pid).cmdline())
        except psutil.NoSuchProcess:
            raise BadInputError(f"no process {pid}") from None
        except psutil.Error as exc:
            raise BadInputError(f"process {pid}: {exc}") from None
        if not is_vllm_launch(argv):
            raise BadInputError(f"process {pid} is not a vLLM server: {' '.join(redact_argv(argv))[:200]}")
        return Found(pid, argv)
    servers = vllm_servers()
    if not servers:
        raise BadInputError("no vLLM server runs here (a process running `vllm serve`); give --pid")
    if len(servers) > 1:
        listed = ", ".join(str(s.pid) for s in servers)
        raise BadInputError(f"several vLLM servers run (pids {listed}): say which with --pid")
    return servers[0]


def _cgroup(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return ""


def adoption_problem(pid: int) -> str | None:
    """Why rigctl could not stop this server as its own, or None."""
    try:
        proc = psutil.Process(pid)
        uid = proc.uids().real
    except psutil.Error as exc:
        return f"process {pid}: {exc}"
    if os.geteuid() not in (0, uid):
        return f"process {pid} belongs to uid {uid}: rigctl, as uid {os.geteuid()}, could not stop it (run as that user or root)"
    # a container or a unit rigctl itself runs in (a CI runner's, a container of both) is no
    # boundary: only one the server is in and rigctl is not
    cgroup, mine = _cgroup(pid), _cgroup(os.getpid())
    if any(mark in cgroup and mark not in mine for mark in CONTAINER_MARKS):
        return f"process {pid} runs in a container: the docker launcher ([server] launcher = 'docker') serves its own containers"
    own_units = {line.rsplit("/", 1)[-1] for line in mine.splitlines()}
    for line in cgroup.splitlines():
        unit = line.rsplit("/", 1)[-1]
        if unit.endswith(".service") and not unit.startswith(("user@", "session-")) and unit not in own_units:
            return (
                f'process {pid} runs under the systemd unit {unit}: set [server] launcher = "systemd" and [systemd] unit = "{unit}"'
            )
    try:
        group = os.getpgid(pid)
    except OSError as exc:
        return f"process {pid}: {exc.strerror}"
    if group != pid:
        try:
            leader = " ".join(psutil.Process(group).cmdline()[:3]) or "?"
        except psutil.Error:
            leader = "?"
        return (
            f"process {pid} is not its process group's leader (group {group}: {leader}); rigctl stops a server by its "
            f"group, which would take the rest with it: start it as `setsid vllm serve ...`, or let rigctl start it"
        )
    return None


def _log_path(pid: int) -> str:
    """Where its output goes, when that is a file (`vllm serve ... > vllm.log`): rigctl follows it."""
    try:
        target = os.readlink(f"/proc/{pid}/fd/1")
    except OSError:
        return ""
    return target if target.startswith("/") and Path(target).is_file() else ""


def adoption_record(ctx: ServeContext, profile: str, found: Found, table: OptionTable) -> ServerRecord:
    """The record `found` would get as serving `profile`, every refusal of adopt() checked and
    nothing written: the CLI asks this before it imports a profile for the process, so a refused
    adoption leaves no file behind."""
    if ctx.launcher.name != "process":
        raise RigctlError(
            f"[server] launcher is {ctx.launcher.name}: rigctl stops what it serves through it; adopt takes a process"
        )
    problem = adoption_problem(found.pid)
    if problem:
        raise RigctlError(problem)
    current = read_record_once().record
    if current is not None and ctx.launcher.alive(current):
        raise RigctlError(f"rigctl already serves {current.profile} (pid {current.pid}): stop it first, or switch")
    read = read_serve_argv(found.argv, table)
    host = read.flags.get("--host") or "0.0.0.0"
    port_text = read.flags.get("--port") or str(DEFAULT_PORT)
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise RigctlError(f"process {found.pid}: --port {port_text[:20]!r} is not a port")
    port = int(port_text)
    names = tuple((read.flags.get("--served-model-name") or read.model or "").split()) or (read.model or "",)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    url = f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"
    with EngineClient(url, None, timeout=10) as client:  # rigctl's own client: no httpx (and its rich) in the core
        probe = client.probe()
    if not probe.reachable:
        raise RigctlError(f"process {found.pid} does not answer on {url}: {probe.error or 'no answer'}")
    if not probe.healthy:
        raise RigctlError(f"process {found.pid} answers {url}/health with HTTP {probe.status}: not ready to adopt")
    return ServerRecord(
        launcher=ctx.launcher.name,
        profile=profile,
        started=start_time(found.pid) or time.time(),
        log_path=_log_path(found.pid),
        host=host,
        port=port,
        served_names=names,
        argv=tuple(redact_argv(found.argv)),
        pid=found.pid,
        create_time=start_time(found.pid),
        start_id=start_id(found.pid),
    )


def adopt(ctx: ServeContext, profile: str, found: Found, table: OptionTable) -> ServerRecord:
    """Record `found` as serving `profile` (which the caller has made sure exists), under the rig
    lock, checked again there; the adoption is a journal line."""
    began = time.time()
    with RigLock(f"adopt {found.pid} as {profile}", ctx.settings.lock_wait):
        record = adoption_record(ctx, profile, found, table)
        write_record(record)
        write_state(ActiveState(profile, profile, "serving", time.time(), detail=f"adopted pid {found.pid}"))
    try:
        append_ending(
            Ending(when=time.time(), action="adopt", status="switched", target=profile, seconds=round(time.time() - began, 3))
        )
    except OSError as exc:
        ctx.say("warning", f"the switch journal could not be written ({exc.strerror or exc}): the exporter's counts lag")
    return record
