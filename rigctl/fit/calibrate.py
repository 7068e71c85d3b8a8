"""Predictions against what the engine reported: the boot records (history.jsonl) hold the pool
vLLM logged and, where it logged one, its available KV memory. The KV step is exact given that
figure, so the error of a prediction is in the budget; the per-rig correction is the median of
(logged - predicted) budget over this rig's boots, in GiB."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from rigctl.units import GIB


class BootRecord(Protocol):
    """What a boot record (rigctl.state.boots.BootRecord) offers; the fit layer reads, never writes it."""

    @property
    def profile(self) -> str: ...

    @property
    def when(self) -> float: ...

    @property
    def argv(self) -> list[str]: ...

    @property
    def rig(self) -> str | None: ...

    @property
    def kv_tokens(self) -> int | None: ...

    @property
    def max_concurrency(self) -> float | None: ...

    @property
    def available_kv_gib(self) -> float | None: ...


@dataclass(frozen=True)
class Measured:
    """The last boot of a profile on this rig, as the engine reported it."""

    when: float
    pool_tokens: int | None
    available_kv_gib: float | None
    max_concurrency: float | None


@dataclass(frozen=True)
class Correction:
    gib: float  # added to every predicted budget on this rig
    boots: int  # how many boots it rests on
    logged: int = 0  # boots on this rig that logged their available KV (some may not be predictable here)

    def describe(self) -> str:
        if not self.boots and self.logged:
            return (
                f"no correction: {self.logged} boot(s) on this rig logged their available KV, but none of their "
                "models' configs is on this machine or in rigctl's copies, so none could be predicted"
            )
        if not self.boots:
            return "no correction: no boot on this rig logged its available KV"
        return f"{self.gib:+.2f} GiB per GPU, from {self.boots} boot(s) on this rig"


def last_measured(records: Iterable[BootRecord], profile: str, rig: str | None) -> Measured | None:
    mine = [r for r in records if r.profile == profile and (rig is None or r.rig == rig) and r.kv_tokens]
    if not mine:
        return None
    last = max(mine, key=lambda r: r.when)
    return Measured(last.when, last.kv_tokens, last.available_kv_gib, last.max_concurrency)


def correction(records: Iterable[BootRecord], rig: str | None, predict_budget: Callable[[BootRecord], float | None]) -> Correction:
    """`predict_budget(record)` is the predicted available KV bytes for that boot's command line
    (None when its model cannot be read here); explicitly sized KV is not a budget and is skipped."""
    errors = []
    logged = 0
    for record in records:
        if record.rig != rig or record.available_kv_gib is None or "--kv-cache-memory-bytes" in record.argv:
            continue
        logged += 1
        predicted = predict_budget(record)
        if predicted is not None:
            errors.append(record.available_kv_gib - predicted / GIB)
    return Correction(statistics.median(errors) if errors else 0.0, len(errors), logged)
