"""What happened while the owner looked away: edges in the rig and engine readings.

Pure: fed the same snapshots the dashboard shows, returns the alerts to raise. Each alert
fires on a change of state (up -> down, ok -> lost, below -> at the power limit for long),
never on every poll, so a notification means something new.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rigctl.gpu.model import RigSnapshot
from rigctl.severity import Severity

if TYPE_CHECKING:
    from rigctl.serve.serving import ServingStatus

POWER_AT_LIMIT = 0.97  # of the enforced limit: the card is being held back by its power cap
POWER_AT_LIMIT_SECONDS = 120.0  # a burst at the cap is normal; minutes of it mean a capped rig


@dataclass(frozen=True)
class Alert:
    key: str  # what the alert is about, e.g. "engine", "gpu1-lost"
    title: str
    text: str
    severity: Severity


@dataclass
class AlertTracker:
    power_fraction: float = POWER_AT_LIMIT
    power_seconds: float = POWER_AT_LIMIT_SECONDS
    _lost: set[int] = field(default_factory=set)
    _at_limit_since: dict[int, float] = field(default_factory=dict)
    _power_reported: set[int] = field(default_factory=set)
    _serving: str | None = None  # the profile last seen up and answering

    def on_rig(self, snapshot: RigSnapshot) -> list[Alert]:
        alerts: list[Alert] = []
        limits = {gpu.index: gpu.power_limit_w for gpu in snapshot.info.gpus}
        for sample in snapshot.samples:
            index = sample.index
            if sample.lost and index not in self._lost:
                self._lost.add(index)
                alerts.append(
                    Alert(
                        f"gpu{index}-lost",
                        f"GPU{index} lost",
                        f"GPU{index} stopped answering NVML (GpuIsLost): reset or reboot",
                        "error",
                    )
                )
            elif not sample.lost and index in self._lost:
                self._lost.discard(index)
                alerts.append(Alert(f"gpu{index}-lost", f"GPU{index} back", f"GPU{index} answers NVML again", "info"))
            alerts.extend(self._power(index, sample.power_w, limits.get(index), snapshot.timestamp))
        return alerts

    def _power(self, index: int, watts: float | None, limit: float | None, now: float) -> list[Alert]:
        if watts is None or not limit or watts < self.power_fraction * limit:
            self._at_limit_since.pop(index, None)
            self._power_reported.discard(index)
            return []
        since = self._at_limit_since.setdefault(index, now)
        if now - since < self.power_seconds or index in self._power_reported:
            return []
        self._power_reported.add(index)
        minutes = (now - since) / 60
        return [
            Alert(
                f"gpu{index}-power",
                f"GPU{index} at its power limit",
                f"GPU{index} has drawn {watts:.0f} W of its {limit:.0f} W limit for {minutes:.1f} min: "
                "clocks are power-capped, benchmark figures reflect the cap",
                "warning",
            )
        ]

    def on_engine(self, serving: ServingStatus) -> list[Alert]:
        """Engine up -> gone while no switch or stop of rigctl's own explains it."""
        state = serving.state
        if state is not None and state.status in ("switching", "stopped"):
            self._serving = None  # rigctl itself took it down; the switch reports its own outcome
            return []
        if serving.active_profile is not None:
            self._serving = serving.active_profile
            return []
        if self._serving is None:
            return []
        profile, self._serving = self._serving, None
        return [Alert("engine", "engine died", f"{profile}: {_why_down(serving)}", "error")]


def _why_down(serving: ServingStatus) -> str:
    record, probe = serving.record, serving.probe
    if record is not None and not serving.process_alive:
        who = f"pid {record.pid}" if record.pid else record.launcher
        return f"the vLLM process is gone ({who}); `rigctl logs` shows its last lines"
    if probe is not None and probe.status:
        return f"/health answers HTTP {probe.status}"
    if probe is not None and probe.error:
        return f"/health does not answer: {probe.error}"
    return serving.summary
