"""The thresholds of config.toml's [alerts], read once."""

from __future__ import annotations

from dataclasses import dataclass

from rigctl.config import Settings


@dataclass(frozen=True)
class AlertLimits:
    stall_s: float = 60.0
    queue_s: float = 30.0
    window_s: float = 60.0
    preemptions_per_min: float = 30.0
    kv_full_s: float = 120.0
    throttle_s: float = 60.0
    power_s: float = 120.0  # a burst at the cap is normal; minutes of it mean a capped rig
    power_fraction: float = 0.97  # of the enforced limit

    @staticmethod
    def of(settings: Settings) -> AlertLimits:
        return AlertLimits(
            stall_s=settings.alerts_stall,
            queue_s=settings.alerts_queue,
            window_s=max(1.0, settings.alerts_window),
            preemptions_per_min=settings.alerts_preemptions,
            kv_full_s=settings.alerts_kv_full,
            throttle_s=settings.alerts_throttle,
        )
