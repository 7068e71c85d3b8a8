"""What is really being served: the state file, the server record, the process and HTTP.

Never claims more than it can see: a profile counts as active only when the server that
rigctl started for it is alive and answers with its served name. A damaged server.json
is named, and the server it described is looked for by the boot token in its
environment (state/discover.py), so `status` and `stop` still reach it.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rigctl import paths
from rigctl.config import Settings
from rigctl.jsonio import DamagedFile
from rigctl.redact import redact_argv
from rigctl.state import discover
from rigctl.state.servers import ServerView, view_for
from rigctl.state.statefiles import (
    ActiveState,
    RecordRead,
    ServerRecord,
    owner_alive,
    read_record_once,
    read_state,
    record_file,
    write_record,
)

if TYPE_CHECKING:
    from rigctl.engine.client import Probe
    from rigctl.gateway.control import DoorSeen
    from rigctl.state.journal import Action


@dataclass(frozen=True)
class RunningServer:
    """The server rigctl started, if one is alive, and what was noticed finding it."""

    record: ServerRecord | None  # alive (None: nothing of rigctl's runs)
    view: ServerView | None  # how to see it (serve.launchers.launcher_of gives what stops it)
    notes: tuple[str, ...] = ()  # a damaged record named, a record rebuilt
    stale: ServerRecord | None = None  # a record whose server is gone


def find_running(
    settings: Settings, default: ServerView | None = None, thorough: bool = True, read: RecordRead | None = None
) -> RunningServer:
    """The live server of the record. When the record's server is not running (a record restored
    from a backup, or left by a crash between a start and the record's rewrite), when the record
    is damaged, or when there is none and `thorough`: the listening process that carries a boot
    token of this rigctl, its record rebuilt. A server rigctl started is never left unseen.
    `read`: the caller's own read of the record (None: read it now)."""
    notes: list[str] = []
    stale: ServerRecord | None = None
    read = read if read is not None else read_record_once()
    record = read.record
    if read.damage is not None:
        notes.append(read.damage)
    if record is not None:
        view = default if default is not None and record.launcher == default.name else view_for(record, settings)
        if view.alive(record):
            return RunningServer(record, view, tuple(notes))
        if record.launcher != "process":  # systemd and docker name their server; no token to look for
            return RunningServer(None, None, tuple(notes), stale=record)
        stale = record
    elif not notes and not thorough:
        return RunningServer(None, None)
    rebuilt, others = _rediscover(settings)
    for other in others:
        notes.append(
            f"another server of this rigctl runs unrecorded: {other.profile or 'a profile'} (pid {other.pid}"
            f"{f', port {other.port}' if other.port else ''}); `kill -TERM -{other.pid}` stops it"
        )
    if rebuilt is None:
        if notes:
            notes.append("no running server carries rigctl's boot token")
        return RunningServer(None, None, tuple(notes), stale=stale)
    found = f"found {rebuilt.profile} running (pid {rebuilt.pid}, port {rebuilt.port}) by its boot token"
    if stale is not None:
        found = f"{record_file()} named pid {stale.pid} ({stale.profile}), which is not running; " + found
    try:
        write_record(rebuilt)
        notes.append(f"{found}; its record was rebuilt")
    except OSError as exc:
        notes.append(f"{found}; its record could not be rewritten: {exc.strerror or exc}")
    return RunningServer(rebuilt, view_for(rebuilt, settings), tuple(notes))


def _rediscover(settings: Settings) -> tuple[ServerRecord | None, list[discover.FoundServer]]:
    """The server to adopt (the newest listening one), and any others found beside it."""
    found = sorted(
        discover.find_rigctl_servers(str(paths.state_dir())),
        key=lambda s: (s.listener_pid is not None, s.create_time or 0.0),
        reverse=True,
    )
    if not found:
        return None, []
    server = found[0]
    names = discover.served_names_of(server.argv)
    if server.port is not None and server.listener_pid is not None:
        host = "127.0.0.1" if server.host in ("0.0.0.0", "::", "") else server.host
        url = f"http://[{host}]:{server.port}" if ":" in host else f"http://{host}:{server.port}"
        from rigctl.engine.client import EngineClient  # only when a server is found: 4.6 ms of an idle rig's status

        with EngineClient(url, server.env.get("VLLM_API_KEY"), timeout=1.0) as client:
            probe = client.probe()
        names = probe.models or names
    return ServerRecord(
        launcher="process",
        profile=server.profile or "unknown",
        started=server.create_time or 0.0,
        log_path=server.log_path or "",
        host=server.host,
        port=server.port or 0,
        served_names=names,
        argv=tuple(redact_argv(server.argv)),
        pid=server.pid,
        create_time=server.create_time,
        boot_id=server.boot_id,
        start_id=server.start_id,
    ), found[1:]


@dataclass(frozen=True)
class ServingStatus:
    active_profile: str | None  # verified: alive and answering with its served name
    state: ActiveState | None
    record: ServerRecord | None
    process_alive: bool
    probe: Probe | None
    summary: str
    notes: tuple[str, ...] = ()
    api_key: str | None = field(default=None, repr=False)  # the server's own, to ask it more (never shown)
    door: DoorSeen | None = None  # the rig's front door, when one runs (the apps' address)
    door_down: str | None = None  # HOST:PORT of the front door vLLM sits behind, when nothing answers there

    def to_json(self) -> dict[str, Any]:
        state = self.state.to_json() if self.state else None
        if state is not None and state.get("status") == "serving" and self.active_profile is None:
            # the state file says what rigctl last did; what is true is that nothing serves
            state = {**state, "status": "down", "recorded_status": "serving"}
        return {
            "active_profile": self.active_profile,
            "summary": self.summary,
            "notes": list(self.notes),
            "front_door": {**self.door.to_json(), "up": True}
            if self.door
            else {"listen": self.door_down, "up": False}
            if self.door_down
            else None,
            "state": state,
            "server": None
            if self.record is None
            else {
                "profile": self.record.profile,
                "launcher": self.record.launcher,
                "pid": self.record.pid,
                "endpoint": self.record.base_url,
                "served_model_names": list(self.record.served_names),
                "log": self.record.log_path or None,
                "started": self.record.started,
                "alive": self.process_alive,
                "healthy": self.probe.healthy if self.probe else False,
                "max_model_len": self.probe.max_model_len if self.probe else None,
            },
        }


def door_down_text(listen: str) -> str:
    return f"the front door on {listen} is gone: the apps are refused (`rigctl gateway`, or `rigctl watch` brings it back)"


def door_listens(listen: str, timeout_s: float = 0.5) -> bool:
    """Whether anything takes a connection at the apps' address HOST:PORT (the door, there)."""
    host, _, port = listen.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def _door_now() -> DoorSeen | None:
    """The front door, asked over its socket; none there, the door's client (2.6 ms of imports) is not loaded."""
    if not paths.gateway_socket().exists():
        return None
    from rigctl.gateway.control import seen

    return seen()


def _note_killed(state: ActiveState, door: DoorSeen | None) -> None:
    """A switch or stop whose rigctl died wrote no ending: one is written now, with what the front
    door says its apps saw when that process held it."""
    last = door.last_hold if door is not None else None
    apps = last.apps if last is not None and last.pid is not None and last.pid == state.owner_pid else None
    from rigctl.state.journal import note_interrupted  # only for a switch whose rigctl died: 1.6 ms of every status

    action: Action = "stop" if state.status == "stopping" else "switch"
    note_interrupted(action, state.target or state.profile or "", state.since, apps)


def observe(
    settings: Settings, probe: Probe | None = None, thorough: bool = False, read: RecordRead | None = None
) -> ServingStatus:
    """`probe`: a fresh /health + /v1/models answer the caller already has (saves the requests).
    `thorough`: also look for a rigctl server that has no record (costs a scan of listeners).
    `read`: the record as the caller read it for that probe (None: read it now)."""
    notes: list[str] = []
    try:
        state = read_state()
    except DamagedFile as exc:
        state = None
        notes.append(str(exc))
    running = find_running(settings, thorough=thorough, read=read)
    notes += running.notes
    record = running.record or running.stale
    alive = running.record is not None
    api_key = running.view.api_key(record) if alive and running.view and record is not None else None
    if alive and probe is None and record is not None:
        from rigctl.engine.client import EngineClient  # only when a server runs: 4.6 ms of an idle rig's status

        with EngineClient(record.base_url, api_key, timeout=1.0) as client:
            probe = client.probe()
    answering = bool(record and probe and any(probe.serves(n) for n in record.served_names))

    door = _door_now()
    door_down = record.front_door if record is not None and alive and door is None and record.front_door else None
    if door_down is not None and door_listens(door_down):
        door_down = None  # the control channel was slow, but the apps' address takes connections

    def status(active: str | None, summary: str) -> ServingStatus:
        if door is not None:
            summary = f"{summary} | {door.brief()}"
        elif door_down is not None:
            summary = f"{summary} | {door_down_text(door_down)}"
        return ServingStatus(active, state, record, alive, probe, summary, tuple(notes), api_key, door, door_down)

    switching = bool(state and state.status == "switching")
    if switching and state and owner_alive(state.owner_pid, state.owner_start):
        return status(None, f"switching to {state.target} (rigctl pid {state.owner_pid})")
    if state and state.status in ("switching", "stopping") and not owner_alive(state.owner_pid, state.owner_start):
        _note_killed(state, door)
    if switching and state:
        seen = (
            f"a server for {record.profile} is running" + (" and answering" if answering else ", not answering")
            if record and alive
            else "no server is running"
        )
        return status(None, f"a switch to {state.target} was interrupted (rigctl pid {state.owner_pid} is gone); {seen}")
    if state and state.status == "stopping" and owner_alive(state.owner_pid, state.owner_start):
        return status(None, f"{state.detail} (rigctl pid {state.owner_pid})")
    if record and alive and answering:
        return status(record.profile, f"serving {record.profile} at {record.base_url}")
    if record and alive:
        why = f"HTTP {probe.status}" if probe and probe.status else (probe.error if probe else "no answer")
        return status(None, f"{record.profile} is running but not ready ({why})")
    if state and state.status in ("failed", "interrupted"):
        return status(None, f"nothing serves: {state.detail}")
    if record and not alive:
        return status(None, f"the server for {record.profile} is gone")
    return status(None, "nothing serves")
