"""Which GPUs a server's processes hold: what its power and energy are read from."""

from __future__ import annotations

import psutil

from rigctl.gpu.model import RigSnapshot


def serving_gpus(rig: RigSnapshot | None, pid: int | None) -> tuple[int, ...]:
    """The GPUs the server's processes hold (all of them when that cannot be seen)."""
    if rig is None:
        return ()
    every = tuple(s.index for s in rig.samples)
    if pid is None:
        return every
    try:
        family = {pid} | {child.pid for child in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return every
    held = tuple(s.index for s in rig.samples if any(p.pid in family for p in s.processes or ()))
    return held or every
