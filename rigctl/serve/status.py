"""What is really being served: the state file, the server record, the process and HTTP.

Never claims more than it can see: a profile counts as active only when the server that
rigctl started for it is alive and answers with its served name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigctl.config import Settings
from rigctl.engine.client import EngineClient, Probe
from rigctl.serve.control import owner_alive
from rigctl.serve.launchers import launcher_for
from rigctl.serve.record import ServerRecord, read_record
from rigctl.serve.state import ActiveState, read_state


@dataclass(frozen=True)
class ServingStatus:
    active_profile: str | None  # verified: alive and answering with its served name
    state: ActiveState | None
    record: ServerRecord | None
    process_alive: bool
    probe: Probe | None
    summary: str

    def to_json(self) -> dict[str, Any]:
        return {
            "active_profile": self.active_profile,
            "summary": self.summary,
            "state": self.state.to_json() if self.state else None,
            "server": None if self.record is None else {
                "profile": self.record.profile, "launcher": self.record.launcher, "pid": self.record.pid,
                "endpoint": self.record.base_url, "served_model_names": list(self.record.served_names),
                "log": self.record.log_path or None, "started": self.record.started,
                "alive": self.process_alive,
                "healthy": self.probe.healthy if self.probe else False,
                "max_model_len": self.probe.max_model_len if self.probe else None,
            },
        }


def observe(settings: Settings, probe: Probe | None = None) -> ServingStatus:
    """`probe`: a fresh /health + /v1/models answer the caller already has (saves the requests)."""
    state, record = read_state(), read_record()
    alive = False
    if record is not None:
        alive = launcher_for(record, settings).alive(record)
        if alive and probe is None:
            with EngineClient(record.base_url, record.api_key, timeout=1.0) as client:
                probe = client.probe()
    answering = bool(record and probe and any(probe.serves(n) for n in record.served_names))
    interrupted = bool(state and state.status == "switching" and not owner_alive(state.owner_pid))
    if state and state.status == "switching" and not interrupted:
        summary = f"switching to {state.target} (rigctl pid {state.owner_pid})"
        return ServingStatus(None, state, record, alive, probe, summary)
    if interrupted:
        seen = (f"a server for {record.profile} is running" + (" and answering" if answering else ", not answering")
                if record and alive else "no server is running")
        summary = f"a switch to {state.target} was interrupted (rigctl pid {state.owner_pid} is gone); {seen}"
        return ServingStatus(None, state, record, alive, probe, summary)
    if record and alive and answering:
        return ServingStatus(record.profile, state, record, alive, probe, f"serving {record.profile} at "
                             f"{record.base_url}")
    if record and alive:
        why = f"HTTP {probe.status}" if probe and probe.status else (probe.error if probe else "no answer")
        return ServingStatus(None, state, record, alive, probe, f"{record.profile} is running but not ready ({why})")
    if state and state.status == "failed":
        return ServingStatus(None, state, record, alive, probe, f"nothing serves: {state.detail}")
    if record and not alive:
        return ServingStatus(None, state, record, alive, probe, f"the server for {record.profile} is gone")
    return ServingStatus(None, state, record, alive, probe, "nothing serves")
