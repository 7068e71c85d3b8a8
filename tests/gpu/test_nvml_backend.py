"""The real NVML adapter, run over the real pynvml module with a fake libnvidia-ml."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pynvml
import pytest

from rigctl.errors import NoDriverError
from rigctl.gpu.model import P2PCap, P2PStatus
from rigctl.gpu.nvml import NvmlBackend, mask_to_ranges
from rigctl.gpu.sampler import RigSampler
from rigctl.sim.rigspec import load_rig
from rigctl.units import MIB
from tests.support.fake_nvml import GPU_IS_LOST, FakeNvmlLib, installed


@pytest.fixture
def lib() -> FakeNvmlLib:
    return FakeNvmlLib(load_rig("2x3090-nvlink"))


def test_static_facts_come_through_pynvml(lib: FakeNvmlLib) -> None:
    with installed(lib):
        backend = NvmlBackend()
        info = backend.info()
    gpu0, gpu1 = info.gpus
    assert gpu0.name == "NVIDIA GeForce RTX 3090"
    assert gpu0.uuid == "GPU-5c1f2d3a-8b7e-4f10-9a61-0e2b3c4d5e01"
    assert gpu0.bus_id == "00000000:01:00.0" and gpu1.bus_id == "00000000:02:00.0"
    assert gpu0.memory_total == 24576 * MIB
    assert (gpu0.power_limit_w, gpu0.power_min_w, gpu0.power_max_w) == (350.0, 100.0, 400.0)
    assert (gpu0.pcie_gen_max, gpu0.pcie_width_max, gpu0.pcie_gpu_gen_max, gpu0.pcie_gpu_width_max) == (4, 16, 4, 16)
    assert gpu0.cpu_affinity == "0-47" and gpu0.numa_affinity == "0" and gpu0.gpu_numa_id is None
    assert [link.remote_bus_id for link in gpu0.nvlinks] == [gpu1.bus_id] * 4
    assert {link.version for link in gpu0.nvlinks} == {"3.1"}  # enum 5 is NVLink 3.1, not "5"
    assert {link.speed_gbps for link in gpu0.nvlinks} == {14.062}
    assert info.driver_version == "580.95.05" and info.cuda_driver_version == "13.0"
    assert info.pcie_paths == {(0, 1): "PHB"}
    assert info.p2p[(0, 1, P2PCap.NVLINK)] is P2PStatus.OK
    assert info.p2p[(1, 0, P2PCap.PCI)] is P2PStatus.CNS


def test_samples_decode_units_and_memory_v2(lib: FakeNvmlLib) -> None:
    lib.live[1].power_mw = 287_500
    lib.live[1].memory_used = 20_000 * MIB
    lib.live[1].energy_mj = 9_876_543
    lib.live[1].clocks_event_reasons = 0x4 | 0x40
    with installed(lib):
        sample = NvmlBackend().sample()[1]
    assert sample.power_w == 287.5
    assert sample.memory_used == 20_000 * MIB and sample.memory_reserved == 333 * MIB
    assert sample.memory_free == 24576 * MIB - 20_000 * MIB - 333 * MIB
    assert sample.energy_j == pytest.approx(9876.543)
    assert sample.throttle_reasons == ("sw power cap", "hw thermal")
    assert "nvmlDeviceGetMemoryInfo_v2" in lib.calls


def test_old_driver_without_v2_symbols_falls_back(lib: FakeNvmlLib) -> None:
    lib.missing |= {"nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetTemperatureV"}
    lib.live[0].memory_used = 1000 * MIB
    lib.live[0].temperature = 61
    with installed(lib):
        sample = NvmlBackend().sample()[0]
    # v1 folds the driver reservation into "used"; there is no reserved figure to show.
    assert sample.memory_used == 1000 * MIB + 333 * MIB
    assert sample.memory_reserved is None
    assert sample.temperature_c == 61.0
    assert "nvmlDeviceGetTemperature" in lib.calls


OPTIONAL = {
    "nvmlDeviceGetFanSpeed": "fan_pct",
    "nvmlDeviceGetTotalEnergyConsumption": "energy_j",
    "nvmlDeviceGetPowerUsage": "power_w",
    "nvmlDeviceGetUtilizationRates": "util_gpu",
    "nvmlDeviceGetClockInfo": "sm_clock",
    "nvmlDeviceGetCurrPcieLinkGeneration": "pcie_gen",
    "nvmlDeviceGetCurrPcieLinkWidth": "pcie_width",
    "nvmlDeviceGetPerformanceState": "pstate",
    "nvmlDeviceGetCurrentClocksEventReasons": "throttle_reasons",
    "nvmlDeviceGetComputeRunningProcesses_v3": None,
}


@pytest.mark.parametrize("symbol", sorted(OPTIONAL))
def test_not_supported_on_any_optional_field_gives_none(lib: FakeNvmlLib, symbol: str) -> None:
    lib.fail(symbol, pynvml.NVML_ERROR_NOT_SUPPORTED, gpu=0)
    with installed(lib):
        backend = NvmlBackend()
        s0, s1 = backend.sample()
    field = OPTIONAL[symbol]
    if field:
        assert getattr(s0, field) is None
        assert getattr(s1, field) is not None  # the other GPU is unaffected
    assert not s0.lost
    assert s0.memory_used is not None  # one missing field never hides the rest


def test_temperature_not_supported_by_either_call(lib: FakeNvmlLib) -> None:
    lib.fail("nvmlDeviceGetTemperatureV")
    lib.fail("nvmlDeviceGetTemperature")
    with installed(lib):
        sample = NvmlBackend().sample()[0]
    assert sample.temperature_c is None and sample.power_w is not None


def test_memory_not_supported_by_either_version(lib: FakeNvmlLib) -> None:
    lib.fail("nvmlDeviceGetMemoryInfo_v2")
    lib.fail("nvmlDeviceGetMemoryInfo")
    with installed(lib):
        backend = NvmlBackend()
        sample = backend.sample()[0]
    assert backend.info().gpus[0].memory_total is None
    assert sample.memory_used is None and sample.memory_free is None and sample.memory_reserved is None


@pytest.mark.parametrize(
    "symbol,attr",
    [
        ("nvmlDeviceGetPowerManagementLimitConstraints", "power_min_w"),
        ("nvmlDeviceGetEnforcedPowerLimit", "power_limit_w"),
        ("nvmlDeviceGetMaxPcieLinkGeneration", "pcie_gen_max"),
        ("nvmlDeviceGetGpuMaxPcieLinkGeneration", "pcie_gpu_gen_max"),
        ("nvmlDeviceGetMaxPcieLinkWidth", "pcie_width_max"),
        ("nvmlDeviceGetCpuAffinity", "cpu_affinity"),
        ("nvmlDeviceGetMemoryAffinity", "numa_affinity"),
        ("nvmlDeviceGetUUID", "uuid"),
        ("nvmlDeviceGetPersistenceMode", "persistence_mode"),
        ("nvmlDeviceGetMaxClockInfo", "sm_clock_max"),
    ],
)
def test_not_supported_on_static_facts_gives_none(lib: FakeNvmlLib, symbol: str, attr: str) -> None:
    lib.fail(symbol)
    with installed(lib):
        backend = NvmlBackend()
    gpu = backend.info().gpus[0]
    assert getattr(gpu, attr) is None
    assert "NotSupported" in {reason for (index, _), reason in backend.unavailable.items() if index == 0}


def test_no_nvlink_hardware_means_no_links() -> None:
    lib = FakeNvmlLib(load_rig("2x4090-pcie"))
    with installed(lib):
        info = NvmlBackend().info()
    assert all(gpu.nvlinks == () for gpu in info.gpus)
    assert info.p2p[(0, 1, P2PCap.READ)] is P2PStatus.GNS


def test_lost_gpu_is_marked_while_the_other_keeps_updating(lib: FakeNvmlLib) -> None:
    with installed(lib):
        backend = NvmlBackend()
        lib.lost.add(1)
        lib.live[0].power_mw = 100_000
        first = backend.sample()
        lib.live[0].power_mw = 200_000
        second = backend.sample()
    assert first[1].lost and second[1].lost
    assert first[0].power_w == 100.0 and second[0].power_w == 200.0
    assert not second[0].lost


def test_gpu_lost_at_start_still_opens(lib: FakeNvmlLib) -> None:
    lib.fail("nvmlDeviceGetName", GPU_IS_LOST, gpu=1)
    with installed(lib):
        info = NvmlBackend().info()
    assert "lost" in info.gpus[1].name
    assert info.gpus[0].name == "NVIDIA GeForce RTX 3090"


@pytest.mark.parametrize(
    "code",
    [pynvml.NVML_ERROR_GPU_IS_LOST, pynvml.NVML_ERROR_NO_PERMISSION, pynvml.NVML_ERROR_UNKNOWN],
    ids=["GpuIsLost", "NoPermission", "Unknown"],
)
def test_gpu_whose_handle_cannot_be_had_is_shown_lost_and_the_other_works(lib: FakeNvmlLib, code: int) -> None:
    lib.fail("nvmlDeviceGetHandleByIndex_v2", code, gpu=1)
    with installed(lib):
        backend = NvmlBackend()
        info, samples = backend.info(), backend.sample()
    assert info.gpus[0].name == "NVIDIA GeForce RTX 3090" and samples[0].power_w is not None
    assert "cannot be opened" in info.gpus[1].name and samples[1].lost
    assert not any(1 in key[:2] for key in info.p2p)  # no pair query with a GPU that has no handle


@pytest.mark.parametrize(
    "code",
    [pynvml.NVML_ERROR_GPU_IS_LOST, pynvml.NVML_ERROR_NO_PERMISSION, pynvml.NVML_ERROR_UNKNOWN],
    ids=["GpuIsLost", "NoPermission", "Unknown"],
)
def test_gpu_count_failing_is_one_clear_error(lib: FakeNvmlLib, code: int) -> None:
    lib.fail("nvmlDeviceGetCount_v2", code)
    with installed(lib), pytest.raises(NoDriverError) as err:
        NvmlBackend()
    assert "cannot list the GPUs" in str(err.value) and "--sim" in str(err.value) and "\n" not in str(err.value)


def test_library_not_found_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_library(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(pynvml, "nvmlLib", None)
    monkeypatch.setattr(pynvml, "CDLL", no_library)
    with pytest.raises(NoDriverError) as err:
        NvmlBackend()
    assert "--sim" in str(err.value)
    assert "\n" not in str(err.value)


def test_driver_not_loaded_is_one_clear_error(lib: FakeNvmlLib) -> None:
    lib.fail("nvmlInitWithFlags", pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    with installed(lib), pytest.raises(NoDriverError, match="--sim"):
        NvmlBackend()


def test_pynvml_read_index_typo_would_break_p2p(lib: FakeNvmlLib) -> None:
    """The fake passes pynvml's `(0,)` on exactly as ctypes would: rigctl must not use it."""
    with installed(lib):
        NvmlBackend()  # works: our own P2P constants
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(ctypes.ArgumentError):
            pynvml.nvmlDeviceGetP2PStatus(handle, handle, pynvml.NVML_P2P_CAPS_INDEX_READ)


def test_processes_are_named_and_vllm_recognised(lib: FakeNvmlLib) -> None:
    code = "import time; time.sleep(60)"
    vllm = subprocess.Popen([sys.executable, "-c", code, "vllm", "serve", "Qwen/Qwen3-8B"])
    other = subprocess.Popen([sys.executable, "-c", code, "--render-farm"])
    try:
        lib.live[0].compute_processes = [(vllm.pid, 18_000 * MIB)]
        lib.live[0].graphics_processes = [(other.pid, 400 * MIB)]
        with installed(lib):
            sampler = RigSampler(NvmlBackend(), with_host=False)
            snapshot = sampler.snapshot()
    finally:
        vllm.kill()
        other.kill()
        vllm.wait()
        other.wait()
    procs = {p.pid: p for p in snapshot.samples[0].processes or ()}
    assert procs[vllm.pid].vllm_role == "api server"
    assert procs[vllm.pid].used_memory == 18_000 * MIB
    assert procs[other.pid].vllm_role is None
    assert procs[other.pid].name and procs[other.pid].user
    foreign = [w for w in snapshot.warnings if w.code == "foreign-vram"]
    assert len(foreign) == 1 and foreign[0].gpu == 0 and "400 MiB" in foreign[0].message


def test_handles_are_kept_and_static_facts_read_once(lib: FakeNvmlLib) -> None:
    with installed(lib):
        backend = NvmlBackend()
        lib.calls.clear()
        for _ in range(3):
            backend.sample()
    assert "nvmlDeviceGetHandleByIndex_v2" not in lib.calls
    assert "nvmlDeviceGetNvLinkState" not in lib.calls
    assert "nvmlDeviceGetP2PStatus" not in lib.calls
    assert lib.calls.count("nvmlDeviceGetPowerUsage") == 6


@pytest.mark.parametrize(
    "words,expected",
    [
        ([0xFFFFFFFFFFFF], "0-47"),
        ([0b1011], "0-1,3"),
        ([0, 1], "64"),
        ([0], None),
    ],
)
def test_mask_to_ranges(words: list[int], expected: str | None) -> None:
    assert mask_to_ranges(words) == expected


def test_pcie_and_nvlink_traffic_through_pynvml(lib: FakeNvmlLib) -> None:
    """PCIe as NVML's KB/s, NVLink as each active link's payload counter summed (the fake counts
    the same on its four links), batched in one field-values call a GPU a tick."""
    from dataclasses import replace

    from rigctl.gpu.model import nvlink_rates

    with installed(lib):
        backend = NvmlBackend()
        before = backend.sample()[0]
        lib.live[0].pcie_tx_kbps, lib.live[0].pcie_rx_kbps = 1_200_000, 300_000
        lib.live[0].nvlink_tx_kib += 1024 * 1024  # 1 GiB a link
        lib.live[0].nvlink_rx_kib += 512 * 1024
        lib.calls.clear()
        after = replace(backend.sample()[0], timestamp=before.timestamp + 2.0)
    assert (after.pcie_tx_kbps, after.pcie_rx_kbps) == (1_200_000, 300_000)
    tx, rx = nvlink_rates(before, after)
    assert tx == 4 * 2**30 / 2 and rx == 4 * 2**29 / 2  # bytes/s over the 2 s, four links
    assert lib.calls.count("nvmlDeviceGetFieldValues") == 2  # one per GPU, every link and direction in it


def test_traffic_the_driver_cannot_give_is_none_and_not_asked_again() -> None:
    lib = FakeNvmlLib(load_rig("2x4090-pcie"))  # no NVLink
    lib.fail("nvmlDeviceGetPcieThroughput", pynvml.NVML_ERROR_NOT_SUPPORTED)
    with installed(lib):
        backend = NvmlBackend()
        first = backend.sample()[0]
        lib.calls.clear()
        backend.sample()
    assert first.pcie_tx_kbps is None and first.nvlink_tx_kib is None
    assert "nvmlDeviceGetPcieThroughput" not in lib.calls and "nvmlDeviceGetFieldValues" not in lib.calls
