"""A fake libnvidia-ml under the real `pynvml` module.

Only the C library is replaced: `pynvml.nvmlLib` becomes a FakeNvmlLib whose C-named
functions fill the same ctypes structs, buffers and out-parameters the driver fills and
return NVML return codes. Every pynvml wrapper therefore runs for real: its version
probing (`_v2`/`_v3` symbols), struct decoding, bytes handling, and the NVMLError
subclasses raised by `_nvmlCheckReturn`. A function the fake does not define is missing
from the library exactly as on an old driver (NVMLError_FunctionNotFound).
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pynvml

from rigctl.gpu.nvml_codes import (
    FI_NVLINK_GET_SPEED,
    FI_NVLINK_SPEED_MBPS_COMMON,
    NVLINK_VERSION_CODES,
    P2P_CAP_INDEX,
    P2P_CODE_BY_STATUS,
    TOPOLOGY_LEVELS,
)
from rigctl.sim.rigspec import GpuSpec, RigSpec
from rigctl.units import MIB

SUCCESS: int = pynvml.NVML_SUCCESS
NOT_SUPPORTED: int = pynvml.NVML_ERROR_NOT_SUPPORTED
INVALID_ARGUMENT: int = pynvml.NVML_ERROR_INVALID_ARGUMENT
GPU_IS_LOST: int = pynvml.NVML_ERROR_GPU_IS_LOST
INSUFFICIENT_SIZE: int = pynvml.NVML_ERROR_INSUFFICIENT_SIZE


@dataclass
class LiveGpu:
    """What the fake driver reports for one GPU right now; tests change these."""

    memory_used: int = 1 * MIB
    memory_reserved: int = 333 * MIB
    util_gpu: int = 3
    util_memory: int = 1
    power_mw: int = 21_000
    energy_mj: int = 123_456_789
    temperature: int = 34
    fan: int = 30
    sm_clock: int = 210
    mem_clock: int = 405
    pcie_gen: int = 1
    pcie_width: int = 16
    pstate: int = 8
    clocks_event_reasons: int = 0x1
    pcie_tx_kbps: int = 0  # what nvmlDeviceGetPcieThroughput answers (KB/s)
    pcie_rx_kbps: int = 0
    nvlink_tx_kib: int = 0  # each active link's payload counter (KiB since driver load)
    nvlink_rx_kib: int = 0
    compute_processes: list[tuple[int, int]] = field(default_factory=list)  # (pid, bytes)
    graphics_processes: list[tuple[int, int]] = field(default_factory=list)


class FakeNvmlLib:
    """libnvidia-ml.so.1 as seen through ctypes, describing one RigSpec."""

    def __init__(self, spec: RigSpec) -> None:
        self.spec = spec
        self.live = [LiveGpu(power_mw=int(g.idle_power_w * 1000)) for g in spec.gpus]
        self._structs = [pynvml.struct_c_nvmlDevice_t() for _ in spec.gpus]
        self.failures: dict[tuple[str, int | None], int] = {}  # (symbol, gpu or None) -> code
        self.lost: set[int] = set()
        self.calls: list[str] = []
        self.missing: set[str] = set()  # symbols this "driver" lacks

    # -- test controls --------------------------------------------------------------

    def fail(self, symbol: str, code: int = NOT_SUPPORTED, gpu: int | None = None) -> None:
        self.failures[(symbol, gpu)] = code

    def __getattribute__(self, name: str) -> Any:
        attr = object.__getattribute__(self, name)
        if not name.startswith("nvml"):
            return attr
        if name in object.__getattribute__(self, "missing"):
            raise AttributeError(name)  # pynvml turns this into NVMLError_FunctionNotFound
        calls = object.__getattribute__(self, "calls")

        def symbol(*args: Any) -> Any:  # pynvml caches this pointer: record each call
            calls.append(name)
            return attr(*args)

        return symbol

    # -- helpers --------------------------------------------------------------------

    def _gpu(self, handle: Any) -> int:
        address = ctypes.addressof(handle.contents)
        for index, struct in enumerate(self._structs):
            if ctypes.addressof(struct) == address:
                return index
        raise AssertionError("unknown NVML handle")

    def _check_system(self, symbol: str) -> int:
        """The code a call about no GPU returns (an injected failure, else success)."""
        return self.failures.get((symbol, None), SUCCESS)

    def _check(self, symbol: str, handle: Any) -> tuple[int, int]:
        """(the code a call about this GPU returns, the GPU's index)."""
        index = self._gpu(handle)
        if index in self.lost:
            return GPU_IS_LOST, index
        code = self.failures.get((symbol, index), self.failures.get((symbol, None), SUCCESS))
        return code, index

    @staticmethod
    def _out(ref: Any, value: Any) -> int:
        ref._obj.value = value
        return SUCCESS

    def _scalar(self, symbol: str, handle: Any, ref: Any, getter: Any) -> int:
        code, index = self._check(symbol, handle)
        if code != SUCCESS:
            return code
        return self._out(ref, getter(self.spec.gpus[index], self.live[index]))

    # -- system ---------------------------------------------------------------------

    def nvmlInitWithFlags(self, flags: Any) -> int:
        return self._check_system("nvmlInitWithFlags")

    def nvmlShutdown(self) -> int:
        return SUCCESS

    def nvmlSystemGetDriverVersion(self, buf: Any, size: Any) -> int:
        buf.value = self.spec.driver_version.encode()
        return SUCCESS

    def nvmlSystemGetNVMLVersion(self, buf: Any, size: Any) -> int:
        buf.value = self.spec.nvml_version.encode()
        return SUCCESS

    def nvmlSystemGetCudaDriverVersion(self, ref: Any) -> int:
        return self._out(ref, self.spec.cuda_driver_version)

    def nvmlDeviceGetCount_v2(self, ref: Any) -> int:
        code = self._check_system("nvmlDeviceGetCount_v2")
        return code if code != SUCCESS else self._out(ref, len(self.spec.gpus))

    def nvmlDeviceGetHandleByIndex_v2(self, c_index: Any, ref: Any) -> int:
        index = c_index.value
        if index >= len(self._structs):
            return INVALID_ARGUMENT
        code = self.failures.get(
            ("nvmlDeviceGetHandleByIndex_v2", index), self.failures.get(("nvmlDeviceGetHandleByIndex_v2", None), SUCCESS)
        )
        if code != SUCCESS:
            return code
        ref._obj.contents = self._structs[index]
        return SUCCESS

    # -- identity and static facts ----------------------------------------------------

    def nvmlDeviceGetName(self, handle: Any, buf: Any, size: Any) -> int:
        code, index = self._check("nvmlDeviceGetName", handle)
        if code == SUCCESS:
            buf.value = self.spec.gpus[index].name.encode()
        return code

    def nvmlDeviceGetUUID(self, handle: Any, buf: Any, size: Any) -> int:
        code, index = self._check("nvmlDeviceGetUUID", handle)
        if code == SUCCESS:
            buf.value = self.spec.gpus[index].uuid.encode()
        return code

    @staticmethod
    def _fill_pci(pci: Any, bus_id: str) -> None:
        domain, bus, rest = bus_id.split(":")
        pci.busId = bus_id.encode()
        pci.busIdLegacy = f"{domain[-4:]}:{bus}:{rest}".encode()
        pci.domain, pci.bus, pci.device = int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16)

    def nvmlDeviceGetPciInfo_v3(self, handle: Any, ref: Any) -> int:
        code, index = self._check("nvmlDeviceGetPciInfo_v3", handle)
        if code == SUCCESS:
            self._fill_pci(ref._obj, self.spec.gpus[index].bus_id)
        return code

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: Any, lo: Any, hi: Any) -> int:
        code, index = self._check("nvmlDeviceGetPowerManagementLimitConstraints", handle)
        if code == SUCCESS:
            g = self.spec.gpus[index]
            lo._obj.value, hi._obj.value = int(g.power_min_w * 1000), int(g.power_max_w * 1000)
        return code

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetEnforcedPowerLimit", handle, ref, lambda g, l: int(g.power_limit_w * 1000))

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetPowerManagementDefaultLimit", handle, ref, lambda g, l: int(g.power_default_w * 1000))

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetMaxPcieLinkGeneration", handle, ref, lambda g, l: g.pcie_gen_max)

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetGpuMaxPcieLinkGeneration", handle, ref, lambda g, l: g.pcie_gpu_gen_max)

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetMaxPcieLinkWidth", handle, ref, lambda g, l: g.pcie_width_max)

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, kind: Any, ref: Any) -> int:
        code, index = self._check("nvmlDeviceGetMaxClockInfo", handle)
        if code != SUCCESS:
            return code
        g = self.spec.gpus[index]
        return self._out(ref, g.sm_clock_max if kind.value == pynvml.NVML_CLOCK_SM else g.mem_clock_max)

    def nvmlDeviceGetPersistenceMode(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetPersistenceMode", handle, ref, lambda g, l: pynvml.NVML_FEATURE_ENABLED)

    def nvmlDeviceGetCpuAffinity(self, handle: Any, words: int, ref: Any) -> int:
        code, _ = self._check("nvmlDeviceGetCpuAffinity", handle)
        if code == SUCCESS:
            _fill_mask(ref._obj, self.spec.cpu_affinity)
        return code

    def nvmlDeviceGetMemoryAffinity(self, handle: Any, words: int, ref: Any, scope: Any) -> int:
        code, _ = self._check("nvmlDeviceGetMemoryAffinity", handle)
        if code == SUCCESS:
            _fill_mask(ref._obj, self.spec.numa_affinity)
        return code

    def nvmlDeviceGetNumaNodeId(self, handle: Any, ref: Any) -> int:
        code, _ = self._check("nvmlDeviceGetNumaNodeId", handle)
        return NOT_SUPPORTED if code == SUCCESS else code  # discrete GeForce: no GPU NUMA node

    # -- NVLink ----------------------------------------------------------------------

    def _link(self, symbol: str, handle: Any, link: int) -> tuple[int, GpuSpec | None]:
        code, index = self._check(symbol, handle)
        if code != SUCCESS:
            return code, None
        g = self.spec.gpus[index]
        if g.nvlink_peer is None or not isinstance(link, int) or link >= g.nvlink_links:
            return NOT_SUPPORTED if g.nvlink_peer is None else INVALID_ARGUMENT, None
        return SUCCESS, g

    def nvmlDeviceGetNvLinkState(self, handle: Any, link: int, ref: Any) -> int:
        code, g = self._link("nvmlDeviceGetNvLinkState", handle, link)
        return code if g is None else self._out(ref, pynvml.NVML_FEATURE_ENABLED)

    def nvmlDeviceGetNvLinkVersion(self, handle: Any, link: int, ref: Any) -> int:
        code, g = self._link("nvmlDeviceGetNvLinkVersion", handle, link)
        return code if g is None else self._out(ref, NVLINK_VERSION_CODES[g.nvlink_version or "3.1"])

    def nvmlDeviceGetNvLinkRemotePciInfo_v2(self, handle: Any, link: int, ref: Any) -> int:
        code, g = self._link("nvmlDeviceGetNvLinkRemotePciInfo_v2", handle, link)
        if g is None or g.nvlink_peer is None:  # (_link answers only for a GPU with a peer)
            return code
        self._fill_pci(ref._obj, self.spec.gpus[g.nvlink_peer].bus_id)
        return SUCCESS

    def nvmlDeviceGetFieldValues(self, handle: Any, count: Any, ref: Any) -> int:
        code, index = self._check("nvmlDeviceGetFieldValues", handle)
        if code != SUCCESS:
            return code
        g, live = self.spec.gpus[index], self.live[index]
        for value in ref._obj:
            speed = g.nvlink_speed_gbps
            if value.fieldId in (FI_NVLINK_GET_SPEED, FI_NVLINK_SPEED_MBPS_COMMON) and speed:
                value.nvmlReturn, value.valueType = SUCCESS, pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
                value.value.uiVal = round(speed * 1000)
            elif value.fieldId in (138, 139) and g.nvlink_peer is not None and value.scopeId < g.nvlink_links:
                value.nvmlReturn, value.valueType = SUCCESS, pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                value.value.ullVal = live.nvlink_tx_kib if value.fieldId == 138 else live.nvlink_rx_kib
            else:
                value.nvmlReturn = NOT_SUPPORTED
        return SUCCESS

    # -- pairs -----------------------------------------------------------------------

    def nvmlDeviceGetTopologyCommonAncestor(self, h1: Any, h2: Any, ref: Any) -> int:
        code, a = self._check("nvmlDeviceGetTopologyCommonAncestor", h1)
        if code != SUCCESS:
            return code
        pair = self.spec.pair(a, self._gpu(h2))
        return self._out(ref, TOPOLOGY_LEVELS[pair.pcie_path] if pair else 50)

    def nvmlDeviceGetP2PStatus(self, h1: Any, h2: Any, cap_index: Any, ref: Any) -> int:
        if not isinstance(cap_index, int):
            # What ctypes does with pynvml's `NVML_P2P_CAPS_INDEX_READ = 0,` tuple.
            raise ctypes.ArgumentError("argument 3: TypeError: Don't know how to convert parameter 3")
        code, a = self._check("nvmlDeviceGetP2PStatus", h1)
        if code != SUCCESS:
            return code
        pair = self.spec.pair(a, self._gpu(h2))
        cap = next(c for c, i in P2P_CAP_INDEX.items() if i == cap_index)
        status = pair.p2p.get(cap) if pair else None
        return self._out(ref, P2P_CODE_BY_STATUS[status] if status else 5)

    # -- live values -----------------------------------------------------------------

    def nvmlDeviceGetMemoryInfo(self, handle: Any, ref: Any) -> int:
        code, index = self._check("nvmlDeviceGetMemoryInfo", handle)
        if code == SUCCESS:
            g, l = self.spec.gpus[index], self.live[index]
            used = l.memory_used + l.memory_reserved  # v1 folds the driver's reservation into "used"
            ref._obj.total, ref._obj.used, ref._obj.free = g.memory_total, used, g.memory_total - used
        return code

    def nvmlDeviceGetMemoryInfo_v2(self, handle: Any, ref: Any) -> int:
        code, index = self._check("nvmlDeviceGetMemoryInfo_v2", handle)
        if code == SUCCESS:
            g, l = self.spec.gpus[index], self.live[index]
            m = ref._obj
            m.total, m.reserved, m.used = g.memory_total, l.memory_reserved, l.memory_used
            m.free = g.memory_total - l.memory_reserved - l.memory_used
        return code

    def nvmlDeviceGetUtilizationRates(self, handle: Any, ref: Any) -> int:
        code, index = self._check("nvmlDeviceGetUtilizationRates", handle)
        if code == SUCCESS:
            ref._obj.gpu, ref._obj.memory = self.live[index].util_gpu, self.live[index].util_memory
        return code

    def nvmlDeviceGetPowerUsage(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetPowerUsage", handle, ref, lambda g, l: l.power_mw)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetTotalEnergyConsumption", handle, ref, lambda g, l: l.energy_mj)

    def nvmlDeviceGetTemperatureV(self, handle: Any, ref: Any) -> int:
        code, index = self._check("nvmlDeviceGetTemperatureV", handle)
        if code == SUCCESS:
            ref._obj.temperature = self.live[index].temperature
        return code

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetTemperature", handle, ref, lambda g, l: l.temperature)

    def nvmlDeviceGetFanSpeed(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetFanSpeed", handle, ref, lambda g, l: l.fan)

    def nvmlDeviceGetClockInfo(self, handle: Any, kind: Any, ref: Any) -> int:
        return self._scalar(
            "nvmlDeviceGetClockInfo", handle, ref, lambda g, l: l.sm_clock if kind.value == pynvml.NVML_CLOCK_SM else l.mem_clock
        )

    def nvmlDeviceGetPcieThroughput(self, handle: Any, counter: Any, ref: Any) -> int:
        return self._scalar(
            "nvmlDeviceGetPcieThroughput", handle, ref, lambda g, l: l.pcie_tx_kbps if counter.value == 0 else l.pcie_rx_kbps
        )

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetCurrPcieLinkGeneration", handle, ref, lambda g, l: l.pcie_gen)

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetCurrPcieLinkWidth", handle, ref, lambda g, l: l.pcie_width)

    def nvmlDeviceGetPerformanceState(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetPerformanceState", handle, ref, lambda g, l: l.pstate)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetCurrentClocksEventReasons", handle, ref, lambda g, l: l.clocks_event_reasons)

    # -- what other NVML tools ask (nvitop, gpustat): a GeForce card on Linux answers so -----------

    def nvmlDeviceGetIndex(self, handle: Any, ref: Any) -> int:
        code, index = self._check("nvmlDeviceGetIndex", handle)
        return code if code != SUCCESS else self._out(ref, index)

    def _codec(self, symbol: str, handle: Any, util: Any, period: Any) -> int:
        code, _ = self._check(symbol, handle)
        if code == SUCCESS:
            util._obj.value, period._obj.value = 0, 167_000
        return code

    def nvmlDeviceGetEncoderUtilization(self, handle: Any, util: Any, period: Any) -> int:
        return self._codec("nvmlDeviceGetEncoderUtilization", handle, util, period)

    def nvmlDeviceGetDecoderUtilization(self, handle: Any, util: Any, period: Any) -> int:
        return self._codec("nvmlDeviceGetDecoderUtilization", handle, util, period)

    def nvmlDeviceGetComputeMode(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetComputeMode", handle, ref, lambda g, l: 0)  # DEFAULT

    def nvmlDeviceGetDisplayActive(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetDisplayActive", handle, ref, lambda g, l: int(bool(l.graphics_processes)))

    def nvmlDeviceGetPowerManagementLimit(self, handle: Any, ref: Any) -> int:
        return self._scalar("nvmlDeviceGetPowerManagementLimit", handle, ref, lambda g, l: int(g.power_limit_w * 1000))

    def nvmlDeviceIsMigDeviceHandle(self, handle: Any, ref: Any) -> int:
        return self._out(ref, 0)

    def _geforce_not_supported(self, symbol: str, handle: Any) -> int:
        code, _ = self._check(symbol, handle)
        return code if code != SUCCESS else NOT_SUPPORTED

    def nvmlDeviceGetMigMode(self, handle: Any, current: Any, pending: Any) -> int:
        return self._geforce_not_supported("nvmlDeviceGetMigMode", handle)

    def nvmlDeviceGetTotalEccErrors(self, handle: Any, kind: Any, counter: Any, ref: Any) -> int:
        return self._geforce_not_supported("nvmlDeviceGetTotalEccErrors", handle)

    def nvmlDeviceGetDriverModel(self, handle: Any, current: Any, pending: Any) -> int:
        return self._geforce_not_supported("nvmlDeviceGetDriverModel", handle)  # Windows only

    def nvmlDeviceGetDriverModel_v2(self, handle: Any, current: Any, pending: Any) -> int:
        return self._geforce_not_supported("nvmlDeviceGetDriverModel_v2", handle)

    def nvmlDeviceGetConfComputeMemSizeInfo(self, handle: Any, ref: Any) -> int:
        return self._geforce_not_supported("nvmlDeviceGetConfComputeMemSizeInfo", handle)

    def _procs(self, symbol: str, handle: Any, count_ref: Any, array: Any, which: str) -> int:
        code, index = self._check(symbol, handle)
        if code != SUCCESS:
            return code
        procs = getattr(self.live[index], which)
        if array is None:
            count_ref._obj.value = len(procs)
            return INSUFFICIENT_SIZE if procs else SUCCESS
        for slot, (pid, used) in zip(array, procs, strict=False):  # the array has room for more
            slot.pid, slot.usedGpuMemory = pid, used
        count_ref._obj.value = len(procs)
        return SUCCESS

    def nvmlDeviceGetComputeRunningProcesses_v3(self, handle: Any, count: Any, array: Any) -> int:
        return self._procs("nvmlDeviceGetComputeRunningProcesses_v3", handle, count, array, "compute_processes")

    def nvmlDeviceGetGraphicsRunningProcesses_v3(self, handle: Any, count: Any, array: Any) -> int:
        return self._procs("nvmlDeviceGetGraphicsRunningProcesses_v3", handle, count, array, "graphics_processes")


def _fill_mask(array: Any, ranges: str) -> None:
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        for cpu in range(int(lo), int(hi or lo) + 1):
            array[cpu // 64] |= 1 << (cpu % 64)


@contextmanager
def installed(lib: FakeNvmlLib) -> Iterator[FakeNvmlLib]:
    """Put `lib` under pynvml as if libnvidia-ml.so.1 had been loaded; restore after."""
    saved_lib, saved_cache = pynvml.nvmlLib, dict(pynvml._nvmlGetFunctionPointer_cache)
    saved_refcount = pynvml._nvmlLib_refcount
    pynvml.nvmlLib = lib
    pynvml._nvmlGetFunctionPointer_cache.clear()
    try:
        yield lib
    finally:
        pynvml.nvmlLib = saved_lib
        pynvml._nvmlGetFunctionPointer_cache.clear()
        pynvml._nvmlGetFunctionPointer_cache.update(saved_cache)
        pynvml._nvmlLib_refcount = saved_refcount
