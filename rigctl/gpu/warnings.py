"""What the owner of the rig needs to be told, derived from facts and samples (pure)."""

from __future__ import annotations

from collections.abc import Mapping

from rigctl.gpu.model import (
    Gpu,
    GpuSample,
    P2PCap,
    P2PStatus,
    RigInfo,
    RigWarning,
    Topology,
)
from rigctl.gpu.nvml_codes import BENIGN_THROTTLE
from rigctl.units import MIB

# Usable bandwidth per lane and direction, GB/s (after encoding overhead).
_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}


def link_bandwidth(gen: int | None, width: int | None) -> float | None:
    if gen is None or width is None or gen not in _LANE_GBPS:
        return None
    return _LANE_GBPS[gen] * width


def slot_limit(gpu: Gpu) -> RigWarning | None:
    """The link's maximum is below the card's own: the slot, riser or BIOS caps it.

    Only maxima are compared: the current generation drops at idle by design.
    """
    gen_short = gpu.pcie_gen_max is not None and gpu.pcie_gpu_gen_max is not None and gpu.pcie_gen_max < gpu.pcie_gpu_gen_max
    width_short = (
        gpu.pcie_width_max is not None and gpu.pcie_gpu_width_max is not None and gpu.pcie_width_max < gpu.pcie_gpu_width_max
    )
    if not (gen_short or width_short):
        return None
    have = link_bandwidth(gpu.pcie_gen_max, gpu.pcie_width_max)
    could = link_bandwidth(gpu.pcie_gpu_gen_max or gpu.pcie_gen_max, gpu.pcie_gpu_width_max or gpu.pcie_width_max)
    share = f" ({have / could:.0%} of the card's host bandwidth)" if have and could else ""
    card = f"Gen{gpu.pcie_gpu_gen_max or gpu.pcie_gen_max} x{gpu.pcie_gpu_width_max or gpu.pcie_width_max}"
    return RigWarning(
        code="pcie-slot-limited",
        severity="warning",
        gpu=gpu.index,
        message=(
            f"GPU{gpu.index} PCIe link tops out at Gen{gpu.pcie_gen_max} x{gpu.pcie_width_max}, the card does "
            f"{card}{share}: slot-limited; weight loading and host copies are slower, and benchmarks differ"
        ),
    )


def all_reduce_verdict(info: RigInfo, topology: Topology) -> RigWarning | None:
    """What vLLM will decide for tensor-parallel all-reduce, computed the way it asks NVML."""
    n = len(info.gpus)
    if n < 2:
        return None
    if topology.fully_connected_nvlink:
        return RigWarning(
            "vllm-all-reduce",
            "info",
            f"vLLM will see all {n} GPUs fully connected over NVLink (P2P NVLink OK): custom all-reduce on",
        )
    read_ok = all(
        topology.p2p.get((a.index, b.index, P2PCap.READ)) is P2PStatus.OK
        for a in info.gpus
        for b in info.gpus
        if a.index != b.index
    )
    if n > 2:
        return RigWarning(
            "vllm-all-reduce",
            "warning",
            f"{n} GPUs without a full NVLink mesh: vLLM disables custom all-reduce for more than two "
            "PCIe-only GPUs; all-reduce goes through NCCL",
        )
    if read_ok:
        return RigWarning(
            "vllm-all-reduce",
            "info",
            "no NVLink between the GPUs; PCIe P2P is granted, so vLLM can use custom all-reduce over PCIe",
        )
    codes = sorted({(s.value if s else "U") for (i, j, cap), s in topology.p2p.items() if cap is P2PCap.READ})
    return RigWarning(
        "vllm-all-reduce",
        "warning",
        f"no NVLink and PCIe P2P refused ({'/'.join(codes)}): vLLM disables custom all-reduce "
        '("platform lacks GPU P2P capability"); TP all-reduce goes through NCCL via host memory',
    )


def _mib(value: int | None) -> str:
    return f"{(value or 0) / MIB:,.0f} MiB"


def sample_warnings(info: RigInfo, samples: tuple[GpuSample, ...]) -> list[RigWarning]:
    out = []
    for sample in samples:
        if sample.lost:
            out.append(
                RigWarning(
                    "gpu-lost",
                    "error",
                    f"GPU{sample.index} is lost (NVML: GPU is lost); it needs a reset or a reboot",
                    gpu=sample.index,
                )
            )
            continue
        foreign = [p for p in sample.processes or () if not p.is_vllm and (p.used_memory or 0) > 0]
        if foreign:
            total = sum(p.used_memory or 0 for p in foreign)
            who = ", ".join(f"{p.name or p.pid} {_mib(p.used_memory)}" for p in foreign[:3])
            out.append(
                RigWarning(
                    "foreign-vram",
                    "warning",
                    f"GPU{sample.index}: {_mib(total)} held by processes other than vLLM ({who}); "
                    "it counts against gpu_memory_utilization and shrinks the KV cache",
                    gpu=sample.index,
                )
            )
        harmful = [r for r in sample.throttle_reasons or () if r not in BENIGN_THROTTLE and r != "sw power cap"]
        if harmful:
            out.append(
                RigWarning("throttle", "warning", f"GPU{sample.index} is slowed down: {', '.join(harmful)}", gpu=sample.index)
            )
    return out


def static_warnings(info: RigInfo, topology: Topology, env: Mapping[str, str]) -> list[RigWarning]:
    out: list[RigWarning] = []
    for gpu in info.gpus:
        limited = slot_limit(gpu)
        if limited:
            out.append(limited)
        inactive = [link.link for link in gpu.nvlinks if not link.active]
        if gpu.active_nvlinks and inactive:
            out.append(
                RigWarning(
                    "nvlink-inactive",
                    "warning",
                    f"GPU{gpu.index}: NVLink {', '.join(map(str, inactive))} inactive while others are up (bridge seated badly?)",
                    gpu=gpu.index,
                )
            )
        if gpu.persistence_mode is False:
            out.append(
                RigWarning(
                    "persistence-off",
                    "info",
                    f"GPU{gpu.index}: persistence mode off; each vLLM start pays seconds of driver "
                    "init (nvidia-smi -pm 1 or nvidia-persistenced)",
                    gpu=gpu.index,
                )
            )
    verdict = all_reduce_verdict(info, topology)
    if verdict:
        out.append(verdict)
    if len({g.name for g in info.gpus}) > 1 and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        out.append(
            RigWarning(
                "cuda-device-order",
                "warning",
                "mixed GPU models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA numbers the GPUs "
                "fastest-first, so vLLM's GPU N may not be nvidia-smi's GPU N",
            )
        )
    return out
