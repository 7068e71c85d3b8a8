"""Immutable values describing the rig: static GPU facts, live samples, topology.

Every field a driver or a GPU may not provide is `None` (shown as `n/a`), never a
made-up number. Memory is in bytes, power in watts, clocks in MHz, energy in joules.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any

from rigctl.severity import Severity


class P2PStatus(enum.Enum):
    """`nvidia-smi topo -p2p` codes (NVML_P2P_STATUS_*)."""

    OK = "OK"
    CNS = "CNS"  # chipset not supported
    GNS = "GNS"  # GPU not supported
    TNS = "TNS"  # topology (IOH) not supported
    DR = "DR"  # disabled by regkey
    NS = "NS"  # not supported
    U = "U"  # unknown


P2P_LEGEND: dict[str, str] = {
    "X": "Self",
    "OK": "Status Ok",
    "CNS": "Chipset not supported",
    "GNS": "GPU not supported",
    "TNS": "Topology not supported",
    "NS": "Not supported",
    "DR": "Disabled by regkey",
    "U": "Unknown",
}


class P2PCap(enum.Enum):
    """The capability asked of nvmlDeviceGetP2PStatus (our own values, see nvml_codes)."""

    READ = "read"
    WRITE = "write"
    NVLINK = "nvlink"
    ATOMICS = "atomics"
    PCI = "pci"


@dataclass(frozen=True)
class NvLink:
    """One NVLink of a GPU as NVML reports it."""

    link: int
    active: bool
    version: str | None = None  # marketing name, e.g. "3.1"
    remote_bus_id: str | None = None  # normalised, see normalise_bus_id
    speed_gbps: float | None = None  # GB/s per direction, as `nvidia-smi nvlink -s`


@dataclass(frozen=True)
class Gpu:
    """Facts about one GPU that do not change while rigctl runs; read once."""

    index: int
    name: str
    uuid: str | None
    bus_id: str
    memory_total: int | None
    power_limit_w: float | None  # enforced limit: what actually applies
    power_min_w: float | None = None
    power_max_w: float | None = None
    power_default_w: float | None = None
    pcie_gen_max: int | None = None  # link maximum (GPU and slot together)
    pcie_width_max: int | None = None
    pcie_gpu_gen_max: int | None = None  # what the GPU alone supports
    pcie_gpu_width_max: int | None = None
    sm_clock_max: int | None = None
    mem_clock_max: int | None = None
    nvlinks: tuple[NvLink, ...] = ()
    persistence_mode: bool | None = None
    cpu_affinity: str | None = None  # "0-47" as nvidia-smi prints it
    numa_affinity: str | None = None
    gpu_numa_id: int | None = None

    @property
    def active_nvlinks(self) -> tuple[NvLink, ...]:
        return tuple(link for link in self.nvlinks if link.active)


@dataclass(frozen=True)
class GpuProcess:
    """A process holding memory on a GPU."""

    pid: int
    used_memory: int | None
    name: str | None = None
    cmdline: str | None = None
    user: str | None = None
    vllm_role: str | None = None  # "api server", "engine core", "worker TP0", ... or None

    @property
    def is_vllm(self) -> bool:
        return self.vllm_role is not None


@dataclass(frozen=True)
class GpuSample:
    """One reading of one GPU. `lost` means the GPU stopped answering (GpuIsLost)."""

    index: int
    timestamp: float
    lost: bool = False
    memory_used: int | None = None
    memory_free: int | None = None
    memory_reserved: int | None = None  # driver-reserved (memory info v2 only)
    util_gpu: float | None = None  # percent
    util_memory: float | None = None  # memory-bandwidth busy percent, not capacity
    power_w: float | None = None
    energy_j: float | None = None  # since driver load
    temperature_c: float | None = None
    fan_pct: float | None = None
    sm_clock: int | None = None
    mem_clock: int | None = None
    pcie_gen: int | None = None  # current; drops at idle by design
    pcie_width: int | None = None
    pstate: int | None = None
    throttle_reasons: tuple[str, ...] | None = None
    processes: tuple[GpuProcess, ...] | None = None
    # bus traffic: PCIe as NVML gives it (KB/s over its own 20 ms window); NVLink as counters (KiB
    # of payload since driver load, every active link summed) that two samples turn into a rate
    pcie_tx_kbps: float | None = None
    pcie_rx_kbps: float | None = None
    nvlink_tx_kib: float | None = None
    nvlink_rx_kib: float | None = None


def nvlink_rates(before: GpuSample | None, after: GpuSample) -> tuple[float | None, float | None]:
    """(TX, RX) NVLink payload in bytes/s between two samples of one GPU; None where a counter is
    missing or went back (a driver reload)."""
    if before is None or after.timestamp <= before.timestamp:
        return None, None
    seconds = after.timestamp - before.timestamp

    def rate(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None or b < a else (b - a) * 1024 / seconds

    return rate(before.nvlink_tx_kib, after.nvlink_tx_kib), rate(before.nvlink_rx_kib, after.nvlink_rx_kib)


@dataclass(frozen=True)
class HostSample:
    """The host beside the GPUs: vLLM pins host memory, so RAM and swap matter."""

    timestamp: float
    cpu_pct: float | None
    cpu_count: int | None
    load_avg: tuple[float, float, float] | None
    mem_total: int | None
    mem_used: int | None
    mem_available: int | None
    swap_total: int | None
    swap_used: int | None


@dataclass(frozen=True)
class RigInfo:
    """What a backend knows once: GPUs, driver, and the raw pairwise facts."""

    backend: str  # "nvml" or "sim:<name>"
    gpus: tuple[Gpu, ...]
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    nvml_version: str | None = None
    # (i, j) with i < j -> NVML common-ancestor level label (PIX, PXB, PHB, NODE, SYS)
    pcie_paths: dict[tuple[int, int], str] = field(default_factory=dict)
    # (i, j, cap) for every ordered pair i != j -> status (None: the query failed)
    p2p: dict[tuple[int, int, P2PCap], P2PStatus | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Topology:
    """The matrix `nvidia-smi topo -m` prints, computed from NVML facts."""

    labels: dict[tuple[int, int], str]  # every ordered pair, "X" on the diagonal
    nvlink_counts: dict[tuple[int, int], int]
    p2p: dict[tuple[int, int, P2PCap], P2PStatus | None]
    fully_connected_nvlink: bool  # vLLM's is_fully_connected() verdict


@dataclass(frozen=True)
class RigWarning:
    """Something the owner should know; `gpu` is None when it concerns the rig."""

    code: str
    severity: Severity
    message: str
    gpu: int | None = None


@dataclass(frozen=True)
class RigSnapshot:
    """Everything the rig view shows at one moment."""

    timestamp: float
    info: RigInfo
    topology: Topology
    samples: tuple[GpuSample, ...]
    host: HostSample | None
    warnings: tuple[RigWarning, ...]

    def sample_for(self, index: int) -> GpuSample | None:
        for sample in self.samples:
            if sample.index == index:
                return sample
        return None


def normalise_bus_id(bus_id: str | bytes) -> str:
    """Upper-case, 8-digit domain: NVML mixes 4- and 8-digit forms and bytes/str."""
    text = bus_id.decode() if isinstance(bus_id, bytes) else bus_id
    text = text.strip().upper()
    domain, sep, rest = text.partition(":")
    if sep and rest.count(":") == 1 and len(domain) <= 8:
        return f"{int(domain, 16):08X}:{rest}"
    return text


def to_jsonable(value: Any) -> Any:
    """Dataclasses, enums and tuple-keyed dicts as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
        for name in ("is_vllm",):
            if hasattr(type(value), name):
                out[name] = getattr(value, name)
        return out
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {_json_key(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


def _json_key(key: Any) -> str:
    if isinstance(key, tuple):
        return ",".join(str(k.value if isinstance(k, enum.Enum) else k) for k in key)
    return str(key.value if isinstance(key, enum.Enum) else key)
