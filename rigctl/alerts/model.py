"""An alert and the change of one: what a notification, a dashboard mark, a line of `status`, a row
of the record and the hook's stdin all say."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any, Literal

from rigctl.severity import Severity

AlertKind = Literal[
    "stall",  # requests wait and no token comes out, /health 200
    "queue",  # mean queue time over the window above the limit
    "preemptions",  # a preemption storm
    "kv-full",  # the KV cache full with requests waiting, sustained
    "engine-died",  # the server went away without rigctl stopping it
    "gpu-lost",  # a GPU stopped answering NVML
    "throttle",  # thermal or hardware clock throttling, sustained
    "power-cap",  # held at the power limit, sustained
    "hit-rate",  # the prefix hit rate collapsed after a switch
    "restart",  # the supervisor restarted the last good profile (an event)
    "restart-budget",  # the supervisor's budget is spent: it restarts no more this hour
    "rig-down",  # nothing serves that should (a reboot, a crash while nothing watched): an event
    "front-door",  # the front door vLLM sits behind is gone, or brought back: an event
]
ChangeState = Literal["fired", "cleared", "event"]


@dataclass(frozen=True)
class Alert:
    key: str  # one condition of one thing: "stall", "gpu1-lost"
    kind: AlertKind
    title: str
    text: str  # one line: what and how long, with what to do when there is something
    severity: Severity


@dataclass(frozen=True)
class AlertChange:
    alert: Alert
    state: ChangeState
    at: float  # epoch seconds
    profile: str | None = None  # what served (or last served) when it changed

    @property
    def line(self) -> str:
        said = {"fired": "alert", "cleared": "cleared", "event": "event"}[self.state]
        return f"{said}: {self.alert.title}: {self.alert.text}"

    def to_json(self) -> dict[str, Any]:
        """What the hook reads on stdin and `status --json` lists."""
        return {
            "state": self.state,
            "kind": self.alert.kind,
            "key": self.alert.key,
            "severity": self.alert.severity,
            "title": self.alert.title,
            "text": self.alert.text,
            "profile": self.profile,
            "at": round(self.at, 3),
            "host": socket.gethostname(),  # several rigs may share one ntfy topic
        }
