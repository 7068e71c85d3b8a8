"""Is the rig serving: the verdict `rigctl status --check` exits with, for scripts (cron, a systemd
ExecStartPost, Uptime Kuma, a blackbox probe). Three answers, each with one line naming the cause:

    healthy   the active profile's server is alive, answers with its served name, and serves
              (when requests wait, tokens come out)
    down      nothing serves: nothing was started, its process is gone, a switch is under way,
              or it does not answer in time
    degraded  up, but something an owner would want to know fires: the front door vLLM sits
              behind is gone (the apps are refused), admission stalled (requests wait, no token
              comes out), the KV cache full with requests waiting, the prefix hit rate collapsed
              after a switch

The engine's figures come from two scrapes `window` seconds apart (a /health 200 says nothing of
whether anything is being served: the failure owners actually hit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rigctl.engine.metrics import EngineSnapshot
from rigctl.errors import ExitCode
from rigctl.state.serving import ServingStatus

Verdict = Literal["healthy", "down", "degraded", "benching"]


@dataclass(frozen=True)
class HealthCheck:
    verdict: Verdict
    cause: str  # one line: what serves, or why it does not
    reasons: tuple[str, ...] = ()  # every reason it is degraded
    profile: str | None = None

    @property
    def exit_code(self) -> ExitCode:
        codes = {"healthy": ExitCode.OK, "down": ExitCode.DOWN, "degraded": ExitCode.DEGRADED, "benching": ExitCode.BENCHING}
        return codes[self.verdict]

    def line(self) -> str:
        return f"{self.verdict}: {self.cause}"

    def to_json(self) -> dict[str, object]:
        return {
            "check": self.verdict,
            "cause": self.cause,
            "reasons": list(self.reasons),
            "profile": self.profile,
            "exit_code": int(self.exit_code),
        }


def benching(holder: str) -> HealthCheck:
    """A bench holds the rig: each arm stops and starts the server, so "down" between two arms is
    the bench at work, not an outage (its own exit code, for a script that pages)."""
    return HealthCheck("benching", f"{holder} holds the rig; its arms switch profiles")


def down_cause(serving: ServingStatus) -> str | None:
    """Why nothing serves, in one line; None when the active profile's server answers."""
    if serving.active_profile is not None:
        return None
    record, state = serving.record, serving.state
    if state is not None and state.status in ("switching", "stopping"):
        return serving.summary
    if record is None:
        if state is not None and state.profile:
            return f"nothing serves: {state.profile} was {state.status} and no server of rigctl's runs now"
        return "nothing serves: rigctl has started no server here"
    if not serving.process_alive:
        return f"the server of {record.profile} (pid {record.pid}) is gone"
    if serving.probe is None or not serving.probe.healthy:
        why = serving.probe.error if serving.probe and serving.probe.error else "no answer"
        return f"{record.profile} (pid {record.pid}) does not answer {record.base_url}/health in time: {why}"
    return f"{record.profile} (pid {record.pid}) answers, but not with its served name ({', '.join(record.served_names)})"


def stalled(before: EngineSnapshot, after: EngineSnapshot) -> str | None:
    """Requests wait and no token came out between the two scrapes: admission stalled."""
    waiting = after.waiting or 0.0
    if waiting <= 0:
        return None
    moved = [(after.counter(name) or 0.0) - (before.counter(name) or 0.0) for name in ("generation_tokens", "prompt_tokens")]
    if any(delta > 0 for delta in moved):
        return None
    seconds = after.timestamp - before.timestamp
    return f"admission stalled: {waiting:.0f} request(s) waiting and no token produced in {seconds:.1f} s"


def kv_full(after: EngineSnapshot) -> str | None:
    if after.kv_full:
        return f"KV cache full ({after.kv_usage_fullest:.0%} of the pool) with {after.waiting:.0f} request(s) waiting"
    return None


def check_health(
    serving: ServingStatus,
    before: EngineSnapshot | None,
    after: EngineSnapshot | None,
    firing: Sequence[str] = (),
) -> HealthCheck:
    """The verdict from what serves and two scrapes of its /metrics (None: the scrape failed);
    `firing`: what else is known to be wrong (the alerts the watch service judges over minutes,
    a hit-rate collapse the record shows), each a line."""
    cause = down_cause(serving)
    if cause is not None:
        return HealthCheck("down", cause, profile=serving.record.profile if serving.record else None)
    record = serving.record
    assert record is not None  # (an active profile has its server's record)
    if before is None or after is None:
        return HealthCheck("down", f"{record.profile} (pid {record.pid}) answers /health but not /metrics", (), record.profile)
    reasons = [r for r in (stalled(before, after), kv_full(after)) if r] + list(firing)
    serves = f"{record.profile} serves (pid {record.pid}, {record.base_url})"
    if serving.door_down is not None:
        # the engine serves, but the apps reach it only through the door: for them, nothing answers
        door = f"the front door on {serving.door_down} is gone: the apps are refused ({serves} behind it)"
        return HealthCheck("degraded", door, (door, *reasons), record.profile)
    if reasons:
        return HealthCheck("degraded", f"{serves}, but {reasons[0]}", tuple(reasons), record.profile)
    return HealthCheck("healthy", serves, (), record.profile)
