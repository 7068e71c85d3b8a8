"""The warnings the owner needs, and the ones they must not get."""

from __future__ import annotations

import dataclasses

from rigctl.gpu.model import GpuProcess, GpuSample, RigWarning
from rigctl.gpu.topology import build_topology
from rigctl.gpu.warnings import sample_warnings, slot_limit, static_warnings
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import load_rig


def warnings_for(rig: str, env: dict[str, str] | None = None) -> list[RigWarning]:
    info = SimulatedBackend(load_rig(rig)).info()
    return static_warnings(info, build_topology(info), env or {})


def test_slot_limited_link_is_reported_for_that_gpu_only() -> None:
    found = [w for w in warnings_for("2x3090-gen3-x8") if w.code == "pcie-slot-limited"]
    assert [w.gpu for w in found] == [1]
    assert "Gen3 x8" in found[0].message and "25%" in found[0].message


def test_idle_link_downshift_is_not_a_warning() -> None:
    # The simulated idle card runs Gen1; only maxima are compared.
    assert not [w for w in warnings_for("2x3090-nvlink") if w.code == "pcie-slot-limited"]


def test_x8_board_in_x8_link_is_not_slot_limited() -> None:
    gpu = SimulatedBackend(load_rig("1x3090")).info().gpus[0]
    narrow = dataclasses.replace(gpu, name="NVIDIA GeForce RTX 4060 Ti", pcie_width_max=8, pcie_gpu_width_max=8)
    assert slot_limit(narrow) is None


def test_all_reduce_verdicts() -> None:
    nvlink = next(w for w in warnings_for("2x3090-nvlink") if w.code == "vllm-all-reduce")
    pcie = next(w for w in warnings_for("2x4090-pcie") if w.code == "vllm-all-reduce")
    assert nvlink.severity == "info" and "fully connected" in nvlink.message
    assert pcie.severity == "warning" and "lacks GPU P2P" in pcie.message
    assert not [w for w in warnings_for("1x3090") if w.code == "vllm-all-reduce"]


def test_mixed_gpus_need_pci_bus_order() -> None:
    info = SimulatedBackend(load_rig("2x3090-nvlink")).info()
    mixed = dataclasses.replace(info, gpus=(info.gpus[0], dataclasses.replace(info.gpus[1], name="NVIDIA GeForce RTX 5090")))
    topo = build_topology(mixed)
    assert [w for w in static_warnings(mixed, topo, {}) if w.code == "cuda-device-order"]
    assert not [w for w in static_warnings(mixed, topo, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}) if w.code == "cuda-device-order"]


def test_vllm_memory_is_not_foreign_and_hw_slowdown_is_named() -> None:
    info = SimulatedBackend(load_rig("1x3090")).info()
    sample = GpuSample(
        index=0,
        timestamp=0.0,
        processes=(GpuProcess(pid=10, used_memory=20 << 30, name="VLLM::Worker_TP0", vllm_role="worker TP0"),),
        throttle_reasons=("hw thermal", "sw power cap"),
    )
    found = sample_warnings(info, (sample,))
    assert [w.code for w in found] == ["throttle"]
    assert "hw thermal" in found[0].message and "power cap" not in found[0].message


def test_lost_gpu_is_an_error() -> None:
    info = SimulatedBackend(load_rig("1x3090")).info()
    found = sample_warnings(info, (GpuSample(index=0, timestamp=0.0, lost=True),))
    assert found[0].code == "gpu-lost" and found[0].severity == "error"
