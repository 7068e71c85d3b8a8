"""A simulated rig: a real GpuBackend over a RigSpec, not a test double.

Static facts come from the rig file. Live values follow what processes claim to hold
and how busy they keep each GPU (see sim_claims): memory, utilisation and power follow
the load, temperature lags behind power, clocks and the PCIe link drop at idle as real
cards do, and a little deterministic noise keeps an idle rig from looking frozen.
"""

from __future__ import annotations

import json
import math
import os
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rigctl.gpu.model import GpuProcess, GpuSample, RigInfo
from rigctl.sim.claims import ClaimedProcess, ClaimsReader
from rigctl.sim.rigspec import GpuSpec, RigSpec
from rigctl.units import MIB

AMBIENT_C = 29.0
DRIVER_RESERVED = 333 * MIB  # what NVML v2 reports as reserved on a 24 GB GeForce card
IDLE = 0.02  # below this load the card clocks down


@dataclass
class _Thermal:
    temperature: float
    energy_j: float
    last: float
    nvlink_kib: float = 0.0  # payload counter, one way (the all-reduce sends what it receives)


# Bus traffic a busy TP rank makes: the decode's all-reduces over NVLink where the pair has it,
# else over PCIe through the host bridge (what the PCIe owners watch); plus the host's own
# traffic (inputs, sampled tokens). Plausible magnitudes, not measured ones.
NVLINK_KIB_S_BUSY = 2.4e6
PCIE_KB_S_ALLREDUCE = 1.6e6
PCIE_KB_S_HOST = 0.15e6


def _noise(*key: object) -> float:
    """Deterministic value in [-1, 1] for a key: no RNG state, same input same output."""
    return zlib.crc32(repr(key).encode()) / 0x7FFFFFFF - 1.0


class GpuFaults:
    """RIGCTL_SIM_GPU_FAULTS: a JSON file, read again whenever it changes, of faults the simulated
    GPUs show, so a test can provoke them mid-run: `{"lost": [1], "throttle": {"0": ["hw thermal"]}}`
    (a GPU that stops answering NVML; clock throttle reasons, NVML's names, beside the load's own)."""

    def __init__(self, path: str | None) -> None:
        self.path = Path(path) if path else None
        self._seen: tuple[int, int] | None = None
        self.lost: frozenset[int] = frozenset()
        self.throttle: dict[int, tuple[str, ...]] = {}

    def read(self) -> None:
        if self.path is None:
            return
        try:
            stat = self.path.stat()
            version = (stat.st_mtime_ns, stat.st_size)
            if version == self._seen:
                return
            data = json.loads(self.path.read_text())
            self._seen = version
        except (OSError, ValueError):
            self.lost, self.throttle, self._seen = frozenset(), {}, None  # no file (or half of one): no faults
            return
        self.lost = frozenset(int(i) for i in data.get("lost", []))
        self.throttle = {int(k): tuple(v) for k, v in data.get("throttle", {}).items()}


class SimulatedBackend:
    """GpuBackend for a simulated rig."""

    def __init__(self, spec: RigSpec, claims_dir: Path | None = None, clock: Callable[[], float] = time.time) -> None:
        self.spec = spec
        self.name = f"sim:{spec.name}"
        self._claims = ClaimsReader(claims_dir)
        self._clock = clock
        self._faults = GpuFaults(os.environ.get("RIGCTL_SIM_GPU_FAULTS"))
        self._info = spec.to_info(self.name)
        start = clock()
        self._thermal = [
            _Thermal(temperature=AMBIENT_C + 4 + g.index * 2, energy_j=1.0e6 + g.index * 3.7e4, last=start) for g in spec.gpus
        ]

    def info(self) -> RigInfo:
        return self._info

    def sample(self) -> tuple[GpuSample, ...]:
        now = self._clock()
        claims = self._claims.read()
        self._faults.read()
        return tuple(
            GpuSample(index=gpu.index, timestamp=now, lost=True)
            if gpu.index in self._faults.lost
            else self._sample_one(gpu, now, [c for c in claims if c.gpu == gpu.index])
            for gpu in self.spec.gpus
        )

    def _sample_one(self, gpu: GpuSpec, now: float, claims: list[ClaimedProcess]) -> GpuSample:
        tick = int(now * 2)  # the noise changes twice a second, like a 1 s NVML average would

        def n(what: str) -> float:
            return _noise(self.spec.name, gpu.index, what, tick)

        load = min(1.0, sum(c.load for c in claims))
        busy = load >= IDLE
        state = self._thermal[gpu.index]
        dt = max(0.0, now - state.last)

        limit = gpu.power_limit_w
        power = gpu.idle_power_w + 2.0 * n("power") if not busy else gpu.idle_power_w + load * (0.93 * limit - gpu.idle_power_w)
        power = min(limit, max(gpu.idle_power_w * 0.6, power + (4.0 * n("power-load") if busy else 0.0)))
        target = AMBIENT_C + 6 + (power / limit) * 44
        state.temperature += (target - state.temperature) * (1 - math.exp(-dt / 30.0))
        state.energy_j += power * dt
        state.last = now
        over_nvlink = gpu.nvlink_peer is not None
        if over_nvlink:
            state.nvlink_kib += load * NVLINK_KIB_S_BUSY * dt
        pcie = load * (PCIE_KB_S_HOST + (0.0 if over_nvlink else PCIE_KB_S_ALLREDUCE)) * (1 + 0.05 * n("pcie"))

        util = load * 100 * (0.9 + 0.1 * n("util")) if busy else max(0.0, 1.5 + 1.5 * n("util"))
        processes = self._processes(gpu, claims)
        used = sum(p.used_memory or 0 for p in processes) + 2 * MIB
        throttle: tuple[str, ...] = ("idle",) if not busy else (("sw power cap",) if power >= 0.97 * limit else ())
        throttle += self._faults.throttle.get(gpu.index, ())
        return GpuSample(
            index=gpu.index,
            timestamp=now,
            memory_used=used,
            memory_free=max(0, gpu.memory_total - DRIVER_RESERVED - used),
            memory_reserved=DRIVER_RESERVED,
            util_gpu=round(min(100.0, util), 1),
            util_memory=round(min(100.0, util * 0.55), 1) if busy else 0.0,
            power_w=round(power, 2),
            energy_j=round(state.energy_j, 3),
            temperature_c=round(state.temperature),
            fan_pct=float(max(30, min(100, round(30 + max(0.0, state.temperature - 50) * 2.2)))),
            sm_clock=int(gpu.sm_clock_max * (0.86 + 0.03 * n("clock"))) if busy else 210,
            mem_clock=gpu.mem_clock_max if busy else 405,
            pcie_gen=gpu.pcie_gen_max if busy else 1,
            pcie_width=gpu.pcie_width_max,
            pstate=2 if busy else 8,
            throttle_reasons=throttle,
            processes=processes,
            pcie_tx_kbps=round(pcie),
            pcie_rx_kbps=round(pcie * 0.97),
            nvlink_tx_kib=round(state.nvlink_kib) if over_nvlink else None,
            nvlink_rx_kib=round(state.nvlink_kib) if over_nvlink else None,
        )

    @staticmethod
    def _processes(gpu: GpuSpec, claims: list[ClaimedProcess]) -> tuple[GpuProcess, ...]:
        resident = [
            GpuProcess(pid=p.pid, used_memory=p.memory_bytes, name=p.name, cmdline=p.cmdline or p.name, user=p.user or "root")
            for p in gpu.processes
        ]
        claimed = [GpuProcess(pid=c.pid, used_memory=c.memory_bytes, name=c.title) for c in claims]
        return tuple(resident + claimed)

    def close(self) -> None:
        """Nothing to release; here so both backends share one interface."""
