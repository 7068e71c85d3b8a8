"""The rig's boot-to-boot noise, measured once: `rigctl bench calibrate PLAN` runs the plan's control
on fresh servers several times (A/A/A...), and how far its figures spread is kept per rig, profile
and workload in state_dir/bench/noise.json. Every arm is a fresh server, and a fresh server is not
the same speed every time (an instance settles into its own regime after a restart): a change
smaller than this spread cannot be told from it, and is never promoted. Refreshed when stale.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rigctl import jsonio
from rigctl.atomic import write_text_atomic
from rigctl.bench.plan import Workload
from rigctl.bench.rawdir import bench_dir

STALE_S = 14 * 86400  # a driver update, a BIOS change, a new cooler: measure again after two weeks


def noise_file() -> Path:
    return bench_dir() / "noise.json"


def workload_key(workload: Workload) -> str:
    return hashlib.sha256(json.dumps(asdict(workload), sort_keys=True, default=str).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Noise:
    rig: str
    profile: str
    workload: str  # workload_key
    runs: int
    when: float
    spread: dict[str, float]  # metric -> (max - min) / mean over the runs

    def of(self, metric: str) -> float | None:
        return self.spread.get(metric)

    def fresh(self, now: float | None = None) -> bool:
        return (now or time.time()) - self.when < STALE_S

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _key(rig: str, profile: str, workload: str) -> str:
    return f"{rig}|{profile}|{workload}"


def read_all() -> dict[str, Noise]:
    try:
        data = jsonio.read_object(noise_file()) or {}
    except jsonio.DamagedFile:
        return {}
    out = {}
    for key, value in data.items():
        try:
            out[key] = Noise(
                str(value["rig"]),
                str(value["profile"]),
                str(value["workload"]),
                int(value["runs"]),
                float(value["when"]),
                {str(k): float(v) for k, v in dict(value["spread"]).items()},
            )
        except (KeyError, TypeError, ValueError):
            continue  # a damaged entry is no measurement: calibrate again
    return out


def known(rig: str, profile: str, workload: Workload) -> Noise | None:
    """The measured noise of this profile on this rig under this workload, if fresh."""
    found = read_all().get(_key(rig, profile, workload_key(workload)))
    return found if found is not None and found.fresh() else None


def keep(noise: Noise) -> None:
    everything = {k: v.to_json() for k, v in read_all().items()}
    everything[_key(noise.rig, noise.profile, noise.workload)] = noise.to_json()
    write_text_atomic(noise_file(), jsonio.dumps(everything, indent=1) + "\n", 0o600)


def spread(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return (max(values) - min(values)) / abs(mean) if mean else None
