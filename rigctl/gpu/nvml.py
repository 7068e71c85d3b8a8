"""The real GPU backend over `pynvml` (package nvidia-ml-py).

NVML is initialised once and handles are kept. Every optional query tolerates
NotSupported and friends (the field becomes None); a GPU that answers GpuIsLost is
marked lost while the others keep updating. Nothing here blocks by design: the
20 ms PCIe throughput sampler is left out.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import Any

from rigctl.errors import NoDriverError
from rigctl.gpu.model import (
    Gpu,
    GpuProcess,
    GpuSample,
    NvLink,
    P2PCap,
    RigInfo,
    normalise_bus_id,
)
from rigctl.gpu.nvml_codes import (
    FI_NVLINK_GET_SPEED,
    FI_NVLINK_SPEED_MBPS_COMMON,
    FI_NVLINK_THROUGHPUT_DATA_RX,
    FI_NVLINK_THROUGHPUT_DATA_TX,
    NVLINK_VERSION_NAMES,
    P2P_CAP_INDEX,
    P2P_STATUS_BY_CODE,
    PCIE_UTIL_RX_BYTES,
    PCIE_UTIL_TX_BYTES,
    TOPOLOGY_LABELS,
    board_pcie_width,
    throttle_names,
)

NO_DRIVER_HINT = "run on a simulated rig with --sim NAME (`rigctl sims` lists them)"


class _Lost(Exception):
    """A GPU answered GpuIsLost mid-sample."""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def mask_to_ranges(words: Any, bits_per_word: int = 64) -> str | None:
    """CPU/NUMA bitmask words -> "0-47,96-143" as nvidia-smi prints it."""
    ids = [w * bits_per_word + b for w, word in enumerate(words) for b in range(bits_per_word) if int(word) >> b & 1]
    if not ids:
        return None
    ranges: list[str] = []
    start = prev = ids[0]
    for cpu in [*ids[1:], None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        ranges.append(str(start) if start == prev else f"{start}-{prev}")
        if cpu is not None:
            start = prev = cpu
    return ",".join(ranges)


def _field_value(field: Any) -> float | None:
    """Decode one c_nvmlFieldValue_t by its valueType (every branch, signed ones too)."""
    if field.nvmlReturn != 0:
        return None
    member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}.get(field.valueType)
    return None if member is None else float(getattr(field.value, member))


class NvmlBackend:
    """GpuBackend over the NVIDIA driver."""

    name = "nvml"

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        import pynvml  # lazily: importing rigctl.gpu must work without a driver

        self._nvml = pynvml
        self._clock = clock
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise NoDriverError(f"NVIDIA driver not usable ({exc}); {NO_DRIVER_HINT}") from exc
        except OSError as exc:  # a broken libnvidia-ml that loads but cannot resolve symbols
            raise NoDriverError(f"NVIDIA driver not usable ({exc}); {NO_DRIVER_HINT}") from exc
        self._closed = False
        try:
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as exc:
            self.close()
            raise NoDriverError(f"the NVIDIA driver loaded but cannot list the GPUs ({exc}); {NO_DRIVER_HINT}") from exc
        self.unopened: dict[int, str] = {}  # GPUs the driver would not hand out: shown lost, the rest work
        self._handles: list[Any] = []
        for index in range(count):
            try:
                self._handles.append(pynvml.nvmlDeviceGetHandleByIndex(index))
            except pynvml.NVMLError as exc:
                self._handles.append(None)
                self.unopened[index] = type(exc).__name__.replace("NVMLError_", "")
        self._memory_v2: bool | None = None  # learnt on first use, driver >= 515 has it
        self.unavailable: dict[tuple[int, str], str] = {}
        self._info = self._read_info()

    # -- queries -------------------------------------------------------------------

    def _opt(self, index: int, field: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Call an NVML function; None when this GPU or driver cannot answer it."""
        nv = self._nvml
        try:
            return fn(*args)
        except nv.NVMLError_GpuIsLost as exc:
            raise _Lost() from exc
        except (nv.NVMLError, nv.NVMLLibraryMismatchError, AttributeError) as exc:
            self.unavailable[(index, field)] = type(exc).__name__.replace("NVMLError_", "")
            return None

    def _read_gpu(self, index: int, handle: Any) -> Gpu:
        nv = self._nvml
        q = self._opt
        name = _text(q(index, "name", nv.nvmlDeviceGetName, handle) or f"GPU {index}")
        pci = q(index, "pci", nv.nvmlDeviceGetPciInfo, handle)
        memory = self._memory(index, handle)
        limits = q(index, "power_limits", nv.nvmlDeviceGetPowerManagementLimitConstraints, handle)
        cpu_words = max(1, math.ceil((os.cpu_count() or 64) / 64))
        cpu_mask = q(index, "cpu_affinity", nv.nvmlDeviceGetCpuAffinity, handle, cpu_words)
        node_mask = q(index, "numa_affinity", nv.nvmlDeviceGetMemoryAffinity, handle, 1, nv.NVML_AFFINITY_SCOPE_NODE)
        persistence = q(index, "persistence", nv.nvmlDeviceGetPersistenceMode, handle)
        return Gpu(
            index=index,
            name=name,
            uuid=_text(q(index, "uuid", nv.nvmlDeviceGetUUID, handle) or "") or None,
            bus_id=normalise_bus_id(pci.busId) if pci is not None else f"unknown:{index}",
            memory_total=memory.total if memory is not None else None,
            power_limit_w=_watts(q(index, "power_limit", nv.nvmlDeviceGetEnforcedPowerLimit, handle)),
            power_min_w=_watts(limits[0]) if limits else None,
            power_max_w=_watts(limits[1]) if limits else None,
            power_default_w=_watts(q(index, "power_default", nv.nvmlDeviceGetPowerManagementDefaultLimit, handle)),
            pcie_gen_max=q(index, "pcie_gen_max", nv.nvmlDeviceGetMaxPcieLinkGeneration, handle),
            pcie_width_max=q(index, "pcie_width_max", nv.nvmlDeviceGetMaxPcieLinkWidth, handle),
            pcie_gpu_gen_max=q(index, "pcie_gpu_gen_max", nv.nvmlDeviceGetGpuMaxPcieLinkGeneration, handle),
            pcie_gpu_width_max=board_pcie_width(name),
            sm_clock_max=q(index, "sm_clock_max", nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_SM),
            mem_clock_max=q(index, "mem_clock_max", nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_MEM),
            nvlinks=self._nvlinks(index, handle),
            persistence_mode=None if persistence is None else persistence == nv.NVML_FEATURE_ENABLED,
            cpu_affinity=mask_to_ranges(cpu_mask) if cpu_mask is not None else None,
            numa_affinity=mask_to_ranges(node_mask) if node_mask is not None else None,
            gpu_numa_id=_numa_id(q(index, "gpu_numa_id", nv.nvmlDeviceGetNumaNodeId, handle)),
        )

    def _nvlinks(self, index: int, handle: Any) -> tuple[NvLink, ...]:
        nv = self._nvml
        links = []
        # The bound changes with the bindings (12, 18, 36): read it, never hard-code it.
        for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18)):
            try:
                state = nv.nvmlDeviceGetNvLinkState(handle, link)
            except nv.NVMLError_GpuIsLost as exc:
                raise _Lost() from exc
            except nv.NVMLError:
                break  # past this GPU's links, or no NVLink at all
            if state != nv.NVML_FEATURE_ENABLED:
                links.append(NvLink(link=link, active=False))
                continue
            version = self._opt(index, "nvlink_version", nv.nvmlDeviceGetNvLinkVersion, handle, link)
            remote = self._opt(index, "nvlink_remote", nv.nvmlDeviceGetNvLinkRemotePciInfo, handle, link)
            links.append(
                NvLink(
                    link=link,
                    active=True,
                    version=NVLINK_VERSION_NAMES.get(version) if version is not None else None,
                    remote_bus_id=normalise_bus_id(remote.busId) if remote is not None else None,
                    speed_gbps=self._nvlink_speed(index, handle, link),
                )
            )
        return tuple(links)

    def _nvlink_speed(self, index: int, handle: Any, link: int) -> float | None:
        fields = self._opt(
            index,
            "nvlink_speed",
            self._nvml.nvmlDeviceGetFieldValues,
            handle,
            [(FI_NVLINK_GET_SPEED, link), FI_NVLINK_SPEED_MBPS_COMMON],
        )
        if fields is None:
            return None
        for field in fields:
            mbps = _field_value(field)
            if mbps:
                return mbps / 1000.0
        return None

    def _memory(self, index: int, handle: Any) -> Any:
        nv = self._nvml
        if self._memory_v2 is not False:
            try:
                mem = nv.nvmlDeviceGetMemoryInfo(handle, version=nv.nvmlMemory_v2)
                self._memory_v2 = True
                return mem
            except nv.NVMLError_GpuIsLost as exc:
                raise _Lost() from exc
            except (nv.NVMLError_FunctionNotFound, nv.NVMLError_NotSupported, AttributeError):
                self._memory_v2 = False
            except nv.NVMLError:
                pass
        return self._opt(index, "memory", nv.nvmlDeviceGetMemoryInfo, handle)

    def _read_info(self) -> RigInfo:
        nv = self._nvml
        gpus = []
        for index, handle in enumerate(self._handles):
            try:
                if handle is None:
                    raise _Lost()
                gpus.append(self._read_gpu(index, handle))
            except _Lost:
                why = f"cannot be opened: {self.unopened[index]}" if index in self.unopened else "lost"
                gpus.append(
                    Gpu(
                        index=index,
                        name=f"GPU {index} ({why})",
                        uuid=None,
                        bus_id=f"lost:{index}",
                        memory_total=None,
                        power_limit_w=None,
                    )
                )
        paths: dict[tuple[int, int], str] = {}
        p2p: dict[tuple[int, int, P2PCap], Any] = {}
        for i, hi in enumerate(self._handles):
            for j, hj in enumerate(self._handles):
                if i == j or hi is None or hj is None:
                    continue
                if i < j:
                    level = self._pair_query(nv.nvmlDeviceGetTopologyCommonAncestor, hi, hj)
                    if level is not None:
                        paths[(i, j)] = TOPOLOGY_LABELS.get(level, "SYS")
                for cap, cap_index in P2P_CAP_INDEX.items():
                    code = self._pair_query(nv.nvmlDeviceGetP2PStatus, hi, hj, cap_index)
                    p2p[(i, j, cap)] = None if code is None else P2P_STATUS_BY_CODE.get(code)
        cuda = self._pair_query(nv.nvmlSystemGetCudaDriverVersion)
        return RigInfo(
            backend=self.name,
            gpus=tuple(gpus),
            driver_version=_maybe_text(self._pair_query(nv.nvmlSystemGetDriverVersion)),
            cuda_driver_version=f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
            nvml_version=_maybe_text(self._pair_query(nv.nvmlSystemGetNVMLVersion)),
            pcie_paths=paths,
            p2p=p2p,
        )

    def _pair_query(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except self._nvml.NVMLError:
            return None

    # -- GpuBackend ----------------------------------------------------------------

    def info(self) -> RigInfo:
        return self._info

    def sample(self) -> tuple[GpuSample, ...]:
        now = self._clock()
        out = []
        for index, handle in enumerate(self._handles):
            try:
                if handle is None:
                    raise _Lost()
                out.append(self._sample_one(index, handle, now))
            except _Lost:
                out.append(GpuSample(index=index, timestamp=now, lost=True))
        return tuple(out)

    def _sample_one(self, index: int, handle: Any, now: float) -> GpuSample:
        nv = self._nvml
        q = self._opt
        mem = self._memory(index, handle)
        util = q(index, "utilization", nv.nvmlDeviceGetUtilizationRates, handle)
        energy = q(index, "energy", nv.nvmlDeviceGetTotalEnergyConsumption, handle)
        reasons = q(index, "throttle", nv.nvmlDeviceGetCurrentClocksEventReasons, handle)
        traffic = self._nvlink_traffic(index, handle)
        return GpuSample(
            index=index,
            timestamp=now,
            memory_used=mem.used if mem is not None else None,
            memory_free=mem.free if mem is not None else None,
            memory_reserved=getattr(mem, "reserved", None) if self._memory_v2 else None,
            util_gpu=float(util.gpu) if util is not None else None,
            util_memory=float(util.memory) if util is not None else None,
            power_w=_watts(q(index, "power", nv.nvmlDeviceGetPowerUsage, handle)),
            energy_j=energy / 1000.0 if energy is not None else None,
            temperature_c=self._temperature(index, handle),
            fan_pct=_float(q(index, "fan", nv.nvmlDeviceGetFanSpeed, handle)),
            sm_clock=q(index, "sm_clock", nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_SM),
            mem_clock=q(index, "mem_clock", nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_MEM),
            pcie_gen=q(index, "pcie_gen", nv.nvmlDeviceGetCurrPcieLinkGeneration, handle),
            pcie_width=q(index, "pcie_width", nv.nvmlDeviceGetCurrPcieLinkWidth, handle),
            pstate=q(index, "pstate", nv.nvmlDeviceGetPerformanceState, handle),
            throttle_reasons=throttle_names(reasons) if reasons is not None else None,
            processes=self._processes(index, handle),
            pcie_tx_kbps=self._pcie(index, handle, PCIE_UTIL_TX_BYTES),
            pcie_rx_kbps=self._pcie(index, handle, PCIE_UTIL_RX_BYTES),
            nvlink_tx_kib=traffic[0],
            nvlink_rx_kib=traffic[1],
        )

    def _pcie(self, index: int, handle: Any, counter: int) -> float | None:
        """KB/s one way; asked no more once the driver said it cannot answer (each call samples
        the bus for 20 ms inside the driver: not worth paying every second for an error)."""
        if (index, "pcie_throughput") in self.unavailable:
            return None
        return _float(self._opt(index, "pcie_throughput", self._nvml.nvmlDeviceGetPcieThroughput, handle, counter))

    def _nvlink_traffic(self, index: int, handle: Any) -> tuple[float | None, float | None]:
        """The active links' payload counters, TX and RX summed, in one nvmlDeviceGetFieldValues
        call a tick; none for a GPU without NVLink or a driver that does not count."""
        links = [link.link for link in self._info.gpus[index].active_nvlinks] if index < len(self._info.gpus) else []
        if not links or (index, "nvlink_throughput") in self.unavailable:
            return None, None
        wanted = [(field, link) for link in links for field in (FI_NVLINK_THROUGHPUT_DATA_TX, FI_NVLINK_THROUGHPUT_DATA_RX)]
        fields = self._opt(index, "nvlink_throughput", self._nvml.nvmlDeviceGetFieldValues, handle, wanted)
        if fields is None:
            return None, None
        values = [_field_value(field) for field in fields]
        tx, rx = values[0::2], values[1::2]
        if None in tx or None in rx:
            self.unavailable[(index, "nvlink_throughput")] = "NotSupported"
            return None, None
        return sum(v or 0.0 for v in tx), sum(v or 0.0 for v in rx)

    def _temperature(self, index: int, handle: Any) -> float | None:
        nv = self._nvml
        getter = getattr(nv, "nvmlDeviceGetTemperatureV", None)
        if getter is not None:
            value = self._opt(index, "temperature", getter, handle, nv.NVML_TEMPERATURE_GPU)
            if value is not None:
                return float(value)
        # The legacy call is deprecated but older drivers only have it.
        return _float(self._opt(index, "temperature", nv.nvmlDeviceGetTemperature, handle, nv.NVML_TEMPERATURE_GPU))

    def _processes(self, index: int, handle: Any) -> tuple[GpuProcess, ...] | None:
        nv = self._nvml
        compute = self._opt(index, "processes", nv.nvmlDeviceGetComputeRunningProcesses, handle)
        # Xorg and desktop shells hold VRAM as graphics processes: foreign memory too.
        graphics = self._opt(index, "graphics_processes", nv.nvmlDeviceGetGraphicsRunningProcesses, handle)
        if compute is None and graphics is None:
            return None
        used: dict[int, int | None] = {}
        for proc in [*(compute or []), *(graphics or [])]:
            previous = used.get(proc.pid)
            used[proc.pid] = proc.usedGpuMemory if previous is None else max(previous, proc.usedGpuMemory or 0)
        return tuple(GpuProcess(pid=pid, used_memory=mem) for pid, mem in sorted(used.items()))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError:
                pass


def _watts(milliwatts: int | None) -> float | None:
    return None if milliwatts is None else milliwatts / 1000.0


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _maybe_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _numa_id(value: int | None) -> int | None:
    return None if value is None or value < 0 else value
