"""Which GPU backend a command gets: a simulated rig when one is named, else NVML.

The one place that knows both: gpu/ stays free of the simulator, sim/ builds on gpu's models.
"""

from __future__ import annotations

import os
from pathlib import Path

from rigctl.gpu.backend import GpuBackend


def selected_sim(explicit: str | None) -> str | None:
    """The simulated rig asked for by --sim, else by RIGCTL_SIM; None means real NVML."""
    return explicit or os.environ.get("RIGCTL_SIM") or None


def open_backend(sim: str | None = None, claims_dir: Path | None = None) -> GpuBackend:
    """A simulated rig when one is named, else NVML (NoDriverError without a driver)."""
    name = selected_sim(sim)
    if name:
        from rigctl.sim.claims import default_claims_dir
        from rigctl.sim.rig import SimulatedBackend
        from rigctl.sim.rigspec import load_rig

        return SimulatedBackend(load_rig(name), claims_dir=claims_dir or default_claims_dir())
    from rigctl.gpu.nvml import NvmlBackend

    return NvmlBackend()
