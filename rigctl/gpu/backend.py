"""The one interface both GPU backends (NVML, a simulated rig) implement; rigctl/backends.py picks one."""

from __future__ import annotations

from typing import Protocol

from rigctl.gpu.model import GpuSample, RigInfo


class GpuBackend(Protocol):
    """NVML or a simulated rig: static facts once, samples on demand."""

    name: str

    def info(self) -> RigInfo: ...

    def sample(self) -> tuple[GpuSample, ...]: ...

    def close(self) -> None: ...
