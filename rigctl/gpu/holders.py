"""Which GPUs a server holds: what its power, energy and J/token are read from. One rule for every
view (the dashboard's engine panel, `rigctl metrics`, the serving record, the bench), so the same
interval has the same J/token wherever it is shown."""

from __future__ import annotations

from collections.abc import Sequence

import psutil

from rigctl.gpu.model import GpuSample


def serving_gpus(samples: Sequence[GpuSample], pid: int | None = None) -> tuple[int, ...]:
    """The GPUs held by the server's own processes (the pid's process family) when rigctl knows
    its pid; else (a container's server: no pid of ours, or a family that holds no GPU in sight)
    the GPUs held by processes vLLM names as its own (VLLM::EngineCore, VLLM::Worker_TP0, ...);
    every GPU when neither can be seen."""
    every = tuple(s.index for s in samples)
    if pid is not None:
        try:
            family = {pid} | {child.pid for child in psutil.Process(pid).children(recursive=True)}
        except psutil.Error:
            family = set()
        held = tuple(s.index for s in samples if any(p.pid in family for p in s.processes or ()))
        if held:
            return held
    named = tuple(s.index for s in samples if any(p.is_vllm for p in s.processes or ()))
    return named or every
