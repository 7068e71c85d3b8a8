"""How long the whole run has left: every arm's boot (this run's boot of that profile once it has
one, else the profile's last recorded boot) and its measuring (the arms finished so far; a
duration_s workload's duration before then). Where a part is not known yet (a profile that never
booted here, the first arm's requests), the sum of the rest is a floor and is said as one."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from rigctl.bench.live import ArmProgress
from rigctl.state import boots

STOP_S = 8.0  # stopping the arm before: vLLM frees its GPUs and ports in a few seconds


def last_boots(profiles: Sequence[str]) -> dict[str, float]:
    """Each profile's most recent recorded boot, in seconds (profiles never booted here left out)."""
    try:
        records = boots.read_all()
    except Exception:  # noqa: BLE001 - an unreadable history only makes the ETA a floor
        return {}
    found: dict[str, tuple[float, float]] = {}
    for record in records:
        if record.profile in profiles and (record.profile not in found or record.when > found[record.profile][0]):
            found[record.profile] = (record.when, record.boot_seconds)
    return {name: seconds for name, (_, seconds) in found.items()}


@dataclass(frozen=True)
class Estimate:
    seconds: float
    floor: bool  # a part is unknown: the run takes at least this long

    def describe(self, words: Callable[[float], str]) -> str:
        if self.floor and self.seconds < 1:
            return "not known yet"  # "≥ 0 s" says nothing
        return ("≥ " if self.floor else "") + words(self.seconds)


@dataclass
class RunClock:
    arms: Sequence[tuple[str, str]]  # (role, profile), in order
    boot_s: dict[str, float]  # per profile: the last boot known
    duration_s: float | None = None  # a duration workload's measured time per arm
    measured: list[float] = field(default_factory=list)  # each finished arm's time from ready to done
    _arm: int = 0
    _phase_since: float = 0.0
    _ready_at: float | None = None

    def _measure(self) -> float | None:
        if self.measured:
            return sum(self.measured) / len(self.measured)
        return self.duration_s

    def estimate(self, progress: ArmProgress, now: float | None = None) -> Estimate:
        """The whole run's time left, given the latest progress of the arm under way."""
        now = time.monotonic() if now is None else now
        if progress.number != self._arm:  # a new arm: its switch began now
            self._arm, self._phase_since, self._ready_at = progress.number, now, None
        if progress.phase != "switching" and self._ready_at is None:
            _, profile = self.arms[progress.number - 1] if 0 < progress.number <= len(self.arms) else ("", "")
            self.boot_s[profile] = now - self._phase_since  # this run's own boot wins from here on
            self._ready_at = now
        if progress.phase == "done" and self._ready_at is not None and len(self.measured) < progress.number:
            self.measured.append(now - self._ready_at)
        floor = False
        left = 0.0
        measure = self._measure()
        number = max(1, progress.number)
        # the arm under way
        if progress.phase != "done" and 0 < progress.number <= len(self.arms):
            profile = self.arms[number - 1][1]
            if progress.phase == "switching":
                boot = self.boot_s.get(profile)
                if boot is None:
                    floor = True
                else:
                    left += max(0.0, boot + STOP_S - (now - self._phase_since))
            if progress.phase == "measuring" and progress.eta_s is not None:
                left += progress.eta_s
            elif measure is None:
                floor = True
            else:
                spent = now - self._ready_at if self._ready_at is not None else 0.0
                left += max(0.0, measure - spent)
        # the arms still to come
        for _, profile in self.arms[number if progress.number else 0 :]:
            boot = self.boot_s.get(profile)
            if boot is None or measure is None:
                floor = True
            left += (boot + STOP_S if boot is not None else 0.0) + (measure or 0.0)
        return Estimate(left, floor)

    def stamp(self, progress: ArmProgress, now: float | None = None) -> ArmProgress:
        estimate = self.estimate(progress, now)
        return replace(progress, run_eta_s=round(estimate.seconds, 1), run_eta_floor=estimate.floor)


def before_the_run(arms: Sequence[tuple[str, str]], boot_s: dict[str, float], duration_s: float | None) -> Estimate:
    """The run's length as it starts (`bench check`, the first line of a run)."""
    return RunClock(arms, dict(boot_s), duration_s).estimate(ArmProgress(0, len(arms), "control", "", "starting"))
