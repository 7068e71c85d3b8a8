"""RigSampler: one backend, one snapshot at a time.

Static facts and the topology are read once; each snapshot costs one pass over the
backend's live queries plus cached process names; snapshots are taken one at a time.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Mapping

from rigctl.gpu.backend import GpuBackend
from rigctl.gpu.host import HostSampler
from rigctl.gpu.model import RigSnapshot
from rigctl.gpu.processes import ProcessInspector
from rigctl.gpu.topology import build_topology
from rigctl.gpu.warnings import sample_warnings, static_warnings


class RigSampler:
    def __init__(
        self,
        backend: GpuBackend,
        *,
        with_host: bool = True,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.backend = backend
        self.info = backend.info()
        self.topology = build_topology(self.info)
        self._static_warnings = tuple(static_warnings(self.info, self.topology, os.environ if env is None else env))
        self._inspector = ProcessInspector()
        self._host = HostSampler(clock) if with_host else None
        self._clock = clock
        self._lock = threading.Lock()

    def snapshot(self) -> RigSnapshot:
        with self._lock:
            return self._take()

    def _take(self) -> RigSnapshot:
        raw = self.backend.sample()
        samples = tuple(dataclasses.replace(s, processes=self._inspector.enrich(s.processes)) for s in raw)
        self._inspector.forget_missing({p.pid for s in samples for p in s.processes or ()})
        return RigSnapshot(
            timestamp=self._clock(),
            info=self.info,
            topology=self.topology,
            samples=samples,
            host=self._host.sample() if self._host else None,
            warnings=self._static_warnings + tuple(sample_warnings(self.info, samples)),
        )

    def close(self) -> None:
        self.backend.close()
