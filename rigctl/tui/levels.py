"""Presentation rules for the TUI, pure: thresholds to CSS classes, compact labels."""

from __future__ import annotations

from rigctl.gpu.model import Gpu, GpuSample


def level(fraction: float | None, warn: float, hot: float) -> str:
    """'-ok', '-warm' or '-hot' for a fraction; '-na' when unknown."""
    if fraction is None:
        return "-na"
    if fraction >= hot:
        return "-hot"
    if fraction >= warn:
        return "-warm"
    return "-ok"


def vram_fraction(gpu: Gpu, sample: GpuSample) -> float | None:
    if sample.memory_used is None or not gpu.memory_total:
        return None
    return (sample.memory_used + (sample.memory_reserved or 0)) / gpu.memory_total


def power_fraction(gpu: Gpu, sample: GpuSample) -> float | None:
    if sample.power_w is None or not gpu.power_limit_w:
        return None
    return sample.power_w / gpu.power_limit_w


def temperature_level(celsius: float | None) -> str:
    return level(None if celsius is None else celsius / 100.0, warn=0.75, hot=0.85)


def short_name(name: str) -> str:
    """'NVIDIA GeForce RTX 3090' -> 'RTX 3090': cards are narrow."""
    for prefix in ("NVIDIA GeForce ", "NVIDIA "):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name
