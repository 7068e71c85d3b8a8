"""The one interface both GPU backends implement, and how rigctl picks one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from rigctl.gpu.model import GpuSample, RigInfo


class GpuBackend(Protocol):
    """NVML or a simulated rig: static facts once, samples on demand."""

    name: str

    def info(self) -> RigInfo: ...

    def sample(self) -> tuple[GpuSample, ...]: ...

    def close(self) -> None: ...


def selected_sim(explicit: str | None) -> str | None:
    """The simulated rig asked for by --sim, else by RIGCTL_SIM; None means real NVML."""
    return explicit or os.environ.get("RIGCTL_SIM") or None


def open_backend(sim: str | None = None, claims_dir: Path | None = None) -> GpuBackend:
    """A simulated rig when one is named, else NVML (NoDriverError without a driver)."""
    name = selected_sim(sim)
    if name:
        from rigctl.sim.rigspec import load_rig
        from rigctl.sim.claims import default_claims_dir
        from rigctl.sim.rig import SimulatedBackend

        return SimulatedBackend(load_rig(name), claims_dir=claims_dir or default_claims_dir())
    from rigctl.gpu.nvml import NvmlBackend

    return NvmlBackend()
